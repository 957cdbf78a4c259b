"""What the dashboard's pages compute from the node's answers (pure parts)."""

from __future__ import annotations

import itertools
from typing import Any

from memory.dynamics.importance import DAY_MS, DecaySettings
from node.dashboard.pages import CURVE_AHEAD_MS, importance_curve, search_args

NOW = 1_800_000_000_000


def _crystal(**changes: Any) -> dict[str, Any]:
    c = {"stored_at_ms": NOW - 10 * DAY_MS, "last_access_ms": None, "semantic_type": "fact", "lifespan": "decay",
         "lifecycle": "generated", "access_count": 0, "emotional_valence": 0.0, "curiosity_boost": 0.0,
         "steering_reward": 0.0, "importance_floor": 0.0}  # fmt: skip
    return {**c, **changes}


def test_the_importance_curve_decays_from_the_last_reinforcement_unless_kept() -> None:
    curve = importance_curve(_crystal(), DecaySettings(), NOW)
    xs, ys = [x for x, _ in curve.points], [y for _, y in curve.points]
    assert xs[0] == NOW - 10 * DAY_MS and xs[-1] == NOW + CURVE_AHEAD_MS
    assert all(a > b for a, b in itertools.pairwise(ys))  # falls all the way
    assert abs(ys[-1] / ys[0] - 0.5 ** (40 / 16.05)) < 0.01  # ~16-day half-life over 40 days
    accessed = importance_curve(_crystal(last_access_ms=NOW - DAY_MS, access_count=10), DecaySettings(), NOW)
    assert accessed.points[0][0] == NOW - DAY_MS and accessed.points[0][1] > 5 * ys[0]  # retrieval strengthens
    for kept in (_crystal(lifespan="permanent"), _crystal(semantic_type="skill"), _crystal(lifecycle="frozen")):
        assert len({round(y, 9) for _, y in importance_curve(kept, DecaySettings(), NOW).points}) == 1  # flat
    floored = importance_curve(_crystal(importance_floor=0.05), DecaySettings(), NOW)
    assert min(y for _, y in floored.points) == 0.05  # a stated importance is a floor


def test_the_search_form_becomes_the_search_commands_arguments() -> None:
    form = {"query": "weekly sync", "mode": "keyword", "since": "7d", "explain": "1", "limit": ""}
    types = {"types": ["fact", "", "event"]}
    assert search_args(form, lambda k: types.get(k, [])) == {
        "query": "weekly sync", "since": "7d", "mode": "keyword", "limit": 20, "detail": "full",
        "types": ["fact", "event"], "explain": True,
    }  # fmt: skip
    assert search_args({}, lambda k: []) is None  # an empty page asks nothing
    assert search_args({"mode": "recent"}, lambda k: [])["mode"] == "recent"  # type: ignore[index]


def _market_page(wallet: dict[str, Any]) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    from node.dashboard import pages

    env = Environment(loader=PackageLoader("node.dashboard", "templates"), autoescape=select_autoescape(default=True))
    env.filters["when"] = pages.when
    env.filters["usdc"] = pages.usdc
    ledger = {"earned_micro_usdc": 0, "pending_micro_usdc": 0, "spent_micro_usdc": 0, "sales": 0, "purchases": 0}
    return env.get_template("market.html").render(
        page="market", wallet=wallet, ledger=ledger, earnings_chart=None, listings=[], own_listings=[], bounties=[],
        csrf="",
    )  # fmt: skip


_WALLET = {"address": "0xabc", "chain": "embedded", "balance_micro_usdc": 5, "owed_micro_usdc": 0,
           "chain_error": None, "recent_purchases": [], "recent_sales": []}  # fmt: skip


def test_the_market_page_shows_the_agents_budget() -> None:
    """Issue 47: the person sees what the agent spent of its daily budget, and the ceiling."""
    from node.dashboard import pages

    spending = {"ceiling_micro_usdc": 1_000_000, "agent_daily_budget_micro_usdc": 3_000_000,
                "agent_spent_today_micro_usdc": 1_250_000, "agent_left_today_micro_usdc": 1_750_000}  # fmt: skip
    html = _market_page({**_WALLET, "spending": spending})
    budget = html.split("The agent's budget", 1)[1].split("</dd>", 1)[0]
    assert pages.usdc(1_250_000) in budget and pages.usdc(3_000_000) in budget and pages.usdc(1_000_000) in budget


def test_the_market_page_says_where_a_bought_skill_went() -> None:
    """Issue 49: a bought skill held for review says so beside its purchase, and how to release it."""
    says = "held for your review (its seller is not trusted here): `bitterbot-node memory quarantine approve c1`"
    bought = {"updated_ms": NOW, "skill": "Vacuum the db", "crystal_id": "c1", "purchase_id": "ab" * 16,
              "stuck": None, "state": "completed", "detail": "", "advice": "received as listed",
              "held": {"status": "held", "says": says}}  # fmt: skip
    html = _market_page({**_WALLET, "recent_purchases": [bought]})
    assert 'data-testid="held">held for your review (its seller is not trusted here)' in html
    assert "memory quarantine approve c1" in html


def test_the_devices_page_shows_a_code_as_a_qr_code_and_escapes_names() -> None:
    from jinja2 import Environment, PackageLoader, select_autoescape

    from node.commands.texts.devices import qr_svg
    from node.dashboard import pages

    env = Environment(loader=PackageLoader("node.dashboard", "templates"), autoescape=select_autoescape(default=True))
    env.filters["when"] = pages.when
    code = "BBPAIR1-" + "A" * 200 + "-ABCD"
    member = {"name": "<b>laptop</b>", "peer_id": "12D3KooWx", "this_device": True, "sync_words": "-"}
    other = {"name": "pi", "peer_id": "12D3KooWy", "this_device": False, "sync_words": "it lacks 3 changes <x>"}
    group = {"group_id": "ab" * 16, "version": 2, "epoch": 0, "removed": None, "pairing_open_until_ms": NOW,
             "members": [member, other]}  # fmt: skip
    html = env.get_template("devices.html").render(
        page="devices", group=group, opened={"code": code, "expires_ms": NOW}, qr=qr_svg(code), csrf="t"
    )
    assert '<svg width="' in html and f"devices join {code}" in html
    assert "&lt;b&gt;laptop&lt;/b&gt; (this device)" in html and "<b>laptop" not in html
    assert "it lacks 3 changes &lt;x&gt;" in html and ">Leave<" in html and ">Remove<" in html
    off = env.get_template("devices.html").render(page="devices", group=None, opened=None, qr=None, csrf="t")
    assert "Pairing needs P2P" in off


def test_the_cli_listing_shows_a_name_without_its_escape_sequences() -> None:
    from node.commands.texts.devices import listing

    member = {"name": "pi\x1b[2J", "peer_id": "12D3KooWx", "this_device": False, "sync": None}
    doc = {"group_id": "ab" * 16, "version": 2, "epoch": 0, "removed": None, "pairing_open_until_ms": None,
           "members": [member]}  # fmt: skip
    text = listing(doc, None)  # type: ignore[arg-type]
    assert "\x1b" not in text and "pi?[2J" in text and "sync: unknown" in text


def test_the_entities_page_lists_who_memory_names_and_what_it_says_of_one() -> None:
    """Issue 52: the dashboard shows what memory knows about someone, with the memories that say it."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    from node.dashboard import pages

    env = Environment(loader=PackageLoader("node.dashboard", "templates"), autoescape=select_autoescape(default=True))
    env.filters["when"] = pages.when
    named = [{"key": "caroline sister", "name": "Caroline's sister", "kind": "person", "crystals": 2,
              "owner": "caroline", "named_by": ["person_in_transcript"]},
             {"key": "o'neill <b>", "name": "O'Neill <b>", "kind": "thing", "crystals": 1, "owner": None,
              "named_by": ["agent"]}]  # fmt: skip
    listing = env.get_template("entities.html").render(page="entities", entities=named, about=None, kinds=["person"],
                                                       kind="", csrf="t")  # fmt: skip
    assert 'href="/ui/entities/caroline%20sister"' in listing and "Caroline&#39;s sister" in listing
    assert "O&#39;Neill &lt;b&gt;" in listing and "O'Neill <b>" not in listing  # a name is words: escaped
    said = {"id": "c1", "text": "My sister Ana got the head nurse job", "created_at_ms": NOW, "voice": "Caroline",
            "speaker": "person_in_transcript"}  # fmt: skip
    about = {"entity": named[0], "aliases": ["Ana"], "memories": [{"crystal": said}], "belongs": [], "related": []}
    page = env.get_template("entities.html").render(page="entities", entities=named, about=about, kinds=[], kind="",
                                                    csrf="t")  # fmt: skip
    assert 'data-testid="aliases">Also called: Ana.' in page and 'href="/ui/entities/caroline"' in page
    assert '<a href="/ui/memory/c1">My sister Ana got the head nurse job</a>' in page and ">Caroline<" in page
