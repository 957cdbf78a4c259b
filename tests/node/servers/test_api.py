"""The local HTTP API through a real HTTP client against a running `bitterbot-node run`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import clean_env
from tests.daemons import Node, api_url, wait_for

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)


class Api:
    def __init__(self, url: str, token: str, node: Node) -> None:
        self.url = url
        self.token = token
        self.node = node  # its CLI reaches the same daemon
        self.owner_token = ""  # the person's (the CLI's) token; ``token`` is the agent's

    def cli(self, *args: str) -> Any:
        """A CLI command run against this daemon, its JSON answer."""
        return self.node.json(*args)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        given = self.token if token is None else token
        if given:
            request.add_header("Authorization", f"Bearer {given}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, doc = self.call(method, path, body)
        assert status == 200, (status, doc)
        return doc


def _routes_never_answered(api: Api) -> list[str]:
    """The routes the daemon's own request counter never saw answer."""
    from node.commands.catalog import COMMANDS

    request = urllib.request.Request(api.url + "/metrics")
    request.add_header("Authorization", f"Bearer {api.token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    answered = {line.split('command="', 1)[1].split('"', 1)[0] for line in text.splitlines()
                if line.startswith("bitterbot_api_requests_total{")}  # fmt: skip
    routed = [command.name for command in COMMANDS.values() if command.route is not None]
    return sorted(name for name in routed if name not in answered)


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Api]:
    node = Node(tmp_path_factory.mktemp("api"), "node", clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing"))
    assert node.cli("init").returncode == 0
    token_file = node.data / "api.token"
    assert token_file.stat().st_mode & 0o777 == 0o600
    node.start()
    try:
        url = wait_for(lambda: api_url(node), 60, "the API to listen")
        assert url.startswith("http://127.0.0.1:")
        api = Api(url, token_file.read_text().strip(), node)
        owner_token = node.data / "owner.token"
        assert owner_token.stat().st_mode & 0o777 == 0o600
        api.owner_token = owner_token.read_text().strip()
        yield api
        # After every test of this module, in whatever order they ran: each route answered at least once
        # (checked only when the whole module was selected, so one test can still be run alone).
        selected = {item.originalname for item in request.session.items
                    if isinstance(item, pytest.Function) and item.module is request.module}  # fmt: skip
        defined = {name for name in vars(request.module) if name.startswith("test_")}
        if selected == defined:
            assert node.proc is not None and node.proc.poll() is None, "the daemon died:\n" + "\n".join(
                node.log_tail(60)
            )
            missing = _routes_never_answered(api)
            assert not missing, f"routes no test of this module exercised: {missing}"
    finally:
        log = node.stop()
    assert "Traceback" not in log, log


def test_the_token_is_required_and_checked(api: Api) -> None:
    for token, says in (
        ("", "bearer token is required"),
        ("wrong", "not this node's"),
        (api.token + "x", "not this node's"),
    ):
        status, doc = api.call("GET", "/v1/status", token=token)
        # issue 32: a wrong and a missing token got the same text
        assert status == 401 and says in doc["error"], doc
        assert "api.token" not in doc["error"] and "/" not in doc["error"]  # issue 13: it named the token's path
    assert api.call("GET", "/v1/health", token="")[0] == 200  # open: liveness only
    assert api.ok("GET", "/v1/status")["state"] == "running"


def test_prometheus_metrics_need_the_token_and_count_what_happened(api: Api) -> None:
    api.ok("POST", "/v1/memory/search", {"query": "anything at all", "mode": "keyword"})
    request = urllib.request.Request(api.url + "/metrics")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    request.add_header("Authorization", f"Bearer {api.token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    searches = [
        line for line in text.splitlines() if line.startswith('bitterbot_memory_search_seconds_count{mode="keyword"}')
    ]
    assert searches and float(searches[0].split()[-1]) >= 1
    for family in (
        "bitterbot_crystals",
        "bitterbot_peers_banned",
        "bitterbot_p2p_queue_dropped_total",
        "bitterbot_dream_seconds",
        "bitterbot_consolidation_seconds",
        "bitterbot_purchases",
    ):
        assert f"# TYPE {family.removesuffix('_total')}" in text, family


def test_the_openapi_document_describes_every_route(api: Api) -> None:
    status, doc = api.call("GET", "/v1/openapi.json", token="")
    assert status == 200 and doc["openapi"].startswith("3.1")
    assert {"/v1/memory/search", "/v1/skills/buy", "/v1/working-memory/bootstrap", "/v1/wallet"} <= set(doc["paths"])
    search = doc["paths"]["/v1/memory/search"]["post"]
    ref = search["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert "mode" in doc["components"]["schemas"][ref]["properties"]


def test_memory_round_trip(api: Api) -> None:
    made = api.ok("POST", "/v1/memory", {"text": "The staging database lives on db2", "type": "fact"})
    crystal_id = made["crystal"]["id"]
    assert made["created"] and made["crystal"]["semantic_type"] == "fact"
    again = api.ok("POST", "/v1/memory", {"text": "The staging database lives on db2", "type": "fact"})
    assert not again["created"] and again["crystal"]["id"] == crystal_id
    hits = api.ok("POST", "/v1/memory/search", {"query": "staging database", "mode": "keyword", "explain": True})
    assert hits[0]["id"] == crystal_id and hits[0]["explain"]["keyword_rank"] == 1
    # issue 32: a hit carried about 50 fields; the default is the dozen a caller reads, "full" gives all
    assert set(hits[0]) == {"id", "text", "type", "importance", "origin", "source", "said_at", "sensitivity",
                            "score", "explain"}  # fmt: skip
    full = api.ok("POST", "/v1/memory/search", {"query": "staging database", "mode": "keyword", "detail": "full"})
    assert full[0]["crystal"]["id"] == crystal_id and len(full[0]["crystal"]) > 30
    typed = api.ok("POST", "/v1/memory/search", {"mode": "typed", "types": ["fact"], "since": "1h"})
    assert [h["id"] for h in typed] == [crystal_id]
    assert api.ok("GET", f"/v1/memory/{crystal_id}")["crystal"]["text"] == "The staging database lives on db2"
    assert api.ok("GET", "/v1/memory/stats")["total"] >= 1
    assert api.ok("DELETE", f"/v1/memory/{crystal_id}?reason=wrong+host") == {"forgotten": crystal_id, "erased": False}
    assert api.call("GET", f"/v1/memory/{crystal_id}")[0] == 404  # forgotten: never returned again
    assert api.ok("POST", "/v1/memory/search", {"query": "staging database", "mode": "keyword"}) == []
    gaps = api.ok("GET", "/v1/memory/gaps")  # that search found nothing: memory keeps the question
    assert {"query": "staging database", "asked": 1} in [{k: g[k] for k in ("query", "asked")} for g in gaps]


def test_a_conversation_captured_over_the_api_links_back_to_its_messages(api: Api) -> None:
    messages = [
        {"role": "user", "content": "hi", "id": "m1"},
        {"role": "user", "content": "Our release train leaves every second Thursday at 10:00.", "id": "m2"},
        {"role": "assistant", "content": "Which branch does it cut from?", "id": "m3"},
        {"role": "user", "content": "From release/next, frozen the Tuesday before.", "id": "m4"},
    ]
    done = api.ok("POST", "/v1/memory/capture", {"messages": messages, "session": "standup-7"})
    assert (done["stored"], done["new_messages"], done["left_out"]) == (1, 4, 1)  # "hi" left out
    shown = api.ok("GET", f"/v1/memory/{done['conversations'][0]['crystal_ids'][0]}")
    # the statement, the question about it and its answer are one piece, and the person's: the
    # assistant's question only frames it (issue 47)
    assert shown["captured_from"] == [{"session": "standup-7", "messages": ["m2", "m3", "m4"]}]
    assert shown["crystal"]["speaker"] == "person_in_transcript"
    assert api.ok("POST", "/v1/memory/capture", {"messages": messages, "session": "standup-7"})["stored"] == 0
    status, doc = api.call("POST", "/v1/memory/capture", {"conversation": '[{"role": "user", "content": "x"'})
    assert status == 400 and "not valid JSON" in doc["error"]


def test_a_capture_is_found_by_meaning_as_soon_as_it_returns(api: Api) -> None:
    """Issue 52: a daemon embeds in the background, so for a moment after a capture its pieces were
    found by keywords only, and an agent that captured and then asked got the stale answer."""
    messages = [{"role": "user", "content": "Our quarterly offsite moved to the lighthouse in Sagres."}]
    done = api.ok("POST", "/v1/memory/capture", {"messages": messages, "session": "offsite-2"})
    assert done["waiting_to_embed"] == 0
    (crystal_id,) = done["conversations"][0]["crystal_ids"]
    found = api.ok("POST", "/v1/memory/search", {"query": "quarterly offsite lighthouse Sagres", "mode": "vector"})
    assert crystal_id in [h["id"] for h in found]


def test_who_memory_names_over_the_api_and_the_cli(api: Api) -> None:
    messages = [
        {"role": "user", "name": "Caroline", "content": "My sister Ana just moved to Porto."},
        {"role": "user", "name": "Melanie", "content": "Oh nice, what does she do there?"},
        {"role": "user", "name": "Caroline", "content": "Ana got the head nurse job at the clinic by the river."},
    ]
    done = api.ok("POST", "/v1/memory/capture", {"messages": messages, "session": "sisters-1"})
    ids = set(done["conversations"][0]["crystal_ids"])
    named = {e["key"]: e for e in api.ok("GET", "/v1/memory/entities")}
    assert {"caroline", "ana", "caroline sister", "porto"} <= set(named), named
    assert named["porto"]["kind"] == "place" and named["caroline"]["kind"] == "person"
    # the relation is found by its name and by the name it was given, with what was said of Ana
    sister = api.ok("GET", "/v1/memory/entities/" + quote("Caroline's sister"))
    assert sister["entity"]["owner"] == "caroline" and sister["aliases"] == ["Ana"]
    ana = api.ok("GET", "/v1/memory/entities/ana")
    assert {m["crystal"]["id"] for m in ana["memories"]} == ids
    assert api.cli("memory", "entity", "Ana")["entity"]["key"] == "ana"
    assert api.call("GET", "/v1/memory/entities/Quentin")[0] == 404
    assert api.call("GET", "/v1/memory/entities?kind=planet")[0] == 400


def test_memory_count_over_the_api_and_the_cli(api: Api) -> None:
    api.ok("POST", "/v1/memory", {"text": "The release train leaves on Wednesdays", "type": "fact"})
    total = api.ok("GET", "/v1/memory/count")["count"]
    facts = api.ok("GET", "/v1/memory/count?type=fact")
    assert facts["type"] == "fact" and 1 <= facts["count"] <= total
    assert api.ok("GET", "/v1/memory/stats")["by_semantic_type"]["fact"] == facts["count"]
    assert api.cli("memory", "count", "--type", "fact") == facts
    assert api.call("GET", "/v1/memory/count?type=gossip")[0] == 400


def test_the_audit_trail_records_who_asked(api: Api) -> None:
    by_agent = api.ok("POST", "/v1/memory", {"text": "The printer is on floor 3"})["crystal"]["id"]
    # The person's token (the CLI's) makes the person the actor; what a request says of itself does not.
    status, by_cli = api.call("POST", "/v1/memory", {"text": "The fax is on floor 2"}, token=api.owner_token)
    assert status == 200
    status, claimed = api.call(
        "POST", "/v1/memory", {"text": "The scanner is on floor 1"}, headers={"X-Bitterbot-Actor": "cli"}
    )
    assert status == 200
    assert api.ok("GET", f"/v1/memory/{claimed['crystal']['id']}")["audit"][0]["actor"] == "agent"
    assert api.ok("GET", f"/v1/memory/{by_agent}")["audit"][0]["actor"] == "agent"
    retyped = api.ok("POST", f"/v1/memory/{by_agent}/type", {"type": "fact"})
    assert (retyped["semantic_type"], retyped["type_source"]) == ("fact", "correction")
    assert api.ok("GET", f"/v1/memory/{by_agent}")["attribution"][-1]["actor"] == "agent"
    assert api.call("POST", f"/v1/memory/{by_agent}/type", {"type": "gossip"})[0] == 400
    linked = api.ok("POST", f"/v1/memory/{by_agent}/links", {"to": by_cli["crystal"]["id"], "type": "contradicts"})
    assert linked["link"].endswith(f"contradicts {by_cli['crystal']['id']}")
    links = api.ok("GET", f"/v1/memory/{by_agent}")["associations"]
    assert {"src_id": by_agent, "type": "contradicts"}.items() <= links[0].items()
    skill = api.ok("POST", "/v1/memory", {"text": "Reset the router: hold reset 10 s", "type": "skill",
                                         "tags": ["network"], "category": "home"})["crystal"]  # fmt: skip
    edited = api.ok("POST", f"/v1/skills/{skill['id']}/edit", {"tags": ["network", "router"], "freeze": True})
    assert (edited["skill"]["tags"], edited["lifecycle"]) == (["network", "router"], "frozen")
    status, refused = api.call("POST", f"/v1/skills/{skill['id']}/edit", {"category": "x"})
    assert status == 400 and "frozen" in str(refused)
    steered = api.ok("POST", f"/v1/memory/{by_agent}/feedback", {"feedback": "useful"})
    assert steered["steering_reward"] == 0.3
    assert api.ok("GET", f"/v1/memory/{by_agent}")["crystal"]["lifespan"] == "decay"
    status, refused = api.call("POST", f"/v1/memory/{by_agent}/pin")
    assert status == 403 and "only the person decides this" in refused["error"]  # pinning adopts: the person's
    status, pinned = api.call("POST", f"/v1/memory/{by_agent}/pin", token=api.owner_token)
    assert (pinned["lifespan"], pinned["expires_at_ms"], pinned["speaker"]) == ("permanent", None, "person")
    details = [a["detail"] for a in api.ok("GET", f"/v1/memory/{by_agent}")["attribution"]]
    assert details[-2:] == ["decay -> permanent", "said by agent, vouched for by person"]
    assert api.cli("memory", "pin", by_agent)["lifespan"] == "permanent"  # pinned again: unchanged
    assert api.call("POST", "/v1/memory/no-such-crystal/pin", token=api.owner_token)[0] == 404
    # Pinned, it is the person's: the agent may not mark it outdated (issue 27), the person may.
    status, refused = api.call("POST", f"/v1/memory/{by_agent}/supersede", {"by": by_cli["crystal"]["id"]})
    assert status == 403 and "is the person's own" in refused["error"]
    status, outdated = api.call(
        "POST", f"/v1/memory/{by_agent}/supersede", {"by": by_cli["crystal"]["id"]}, token=api.owner_token
    )
    assert status == 200 and outdated["superseded"]["by"] == by_cli["crystal"]["id"]
    assert api.ok("GET", f"/v1/memory/{by_agent}")["attribution"][-1]["actor"] == "cli"
    # What the person replaced, the person alone brings back (issue 47: the agent undid a correction).
    status, refused = api.call("POST", f"/v1/memory/{by_agent}/unsupersede")
    assert status == 403 and "is the person's own" in refused["error"]
    status, back = api.call("POST", f"/v1/memory/{by_agent}/unsupersede", token=api.owner_token)
    assert status == 200 and back["superseded"] is None
    status, refused = api.call("POST", f"/v1/memory/{by_agent}/unsupersede", token=api.owner_token)
    assert status == 400 and "not superseded" in str(refused)
    assert api.call("POST", "/v1/memory/no-such-crystal/feedback", {"feedback": "wrong"})[0] == 404
    assert api.ok("GET", f"/v1/memory/{by_cli['crystal']['id']}")["audit"][0]["actor"] == "cli"


def test_working_memory_and_hormones(api: Api) -> None:
    note = api.ok("POST", "/v1/working-memory/notes", {"text": "Release 2.3 is blocked on the migration"})
    assert note["origin"] == "session"
    text = api.ok("GET", "/v1/working-memory/bootstrap?context_window=8000")["text"]
    assert "Release 2.3 is blocked on the migration" in text
    api.ok("POST", "/v1/working-memory/notes", {"text": "The wifi password is hunter2-hunter2"})
    waiting = api.ok("GET", "/v1/working-memory")["scratch"]
    assert [n["text"] for n in waiting] == ["Release 2.3 is blocked on the migration", None]
    assert [n["confidential"] for n in waiting] == [False, True]  # a secret's text never leaves by this route
    dreamt = api.ok("POST", "/v1/working-memory/dream")
    assert dreamt["accepted"] and dreamt["notes_indexed"] == 2
    shown = api.ok("GET", "/v1/working-memory")
    assert shown["scratch"] == [] and "Release 2.3" in shown["memory_md"]
    assert "hunter2" not in shown["memory_md"]
    api.ok("POST", "/v1/working-memory/notes", {"text": "The printer moved to floor 4"})
    assert api.ok("POST", "/v1/working-memory/dream")["accepted"]
    changed = api.ok("GET", "/v1/working-memory")["changed_by_last_dream"]
    assert [line for line in changed if line.startswith("+") and "printer moved" in line]
    before = api.ok("GET", "/v1/hormones")["dopamine"]
    after = api.ok("POST", "/v1/hormones/events", {"events": ["reward"]})["dopamine"]
    assert after > before


def test_skills_peers_weather_and_wallet(api: Api) -> None:
    skill = api.ok("POST", "/v1/memory", {"text": "Rotate logs: logrotate -f", "type": "skill", "scope": "shared"})
    crystal_id = skill["crystal"]["id"]
    status, refused = api.call("POST", f"/v1/skills/{crystal_id}/publish", {})
    assert status == 403 and "only the person decides this" in refused["error"]  # selling is the person's
    status, refused = api.call("POST", f"/v1/skills/{crystal_id}/publish", {}, token=api.owner_token)
    assert status == 400 and "needs at least 3 recorded executions" in refused["error"]
    for _ in range(3):
        recorded = api.ok("POST", f"/v1/skills/{crystal_id}/executions", {"success": True, "reward": 0.9})
    assert recorded["listable"] and recorded["executions"] == 3
    price = api.ok("GET", f"/v1/skills/{crystal_id}/price")
    assert price["listable"] and price["price_micro_usdc"] > 0 and "quality" in price["factors"]
    status, listed = api.call(
        "POST", f"/v1/skills/{crystal_id}/publish", {"title": "Rotate logs"}, token=api.owner_token
    )
    assert status == 200, listed
    assert listed["price_micro_usdc"] == price["price_micro_usdc"]
    assert [r["mine"] for r in api.ok("GET", "/v1/skills")] == [True]
    assert api.ok("GET", "/v1/skills?query=rotate&limit=5&offset=0")[0]["stable_skill_id"] == listed["stable_skill_id"]
    assert api.ok("GET", "/v1/skills?query=nothing-like-it") == []
    status, doc = api.call("GET", "/v1/skills?limit=501")
    assert status == 400 and "limit" in doc["error"]
    bounty = api.ok("POST", "/v1/bounties", {"description": "Backups to S3", "reward": "0.25", "days": 2})
    assert api.ok("GET", "/v1/bounties")[0]["bounty_id"] == bounty["bounty_id"]
    status, embedded = api.call("POST", "/v1/skills/buy", {"listing": "ops.something"})
    assert status == 400 and "embedded development chain" in embedded["error"]
    assert api.ok("POST", "/v1/skills/revoke", {"stable_skill_id": listed["stable_skill_id"]})
    assert api.ok("GET", "/v1/skills") == []
    assert api.ok("GET", "/v1/peers") == []
    assert api.ok("GET", "/v1/weather")["active"] is False
    drill = {"level": 0.5, "duration_s": 60, "reason": "drill"}
    status, weather = api.call("POST", "/v1/weather", drill)
    assert status == 403 and "only the person decides this" in weather["error"]  # the agent speaks for no node
    status, weather = api.call("POST", "/v1/weather", drill, token=api.owner_token)
    assert status == 400 and "only a management node" in weather["error"]
    wallet = api.ok("GET", "/v1/wallet")
    assert wallet["address"].startswith("0x") and wallet["balance_micro_usdc"] == wallet["owed_micro_usdc"] == 0


def test_emerging_skills_over_the_api(api: Api) -> None:
    """Issue 30: the same task written three times emerges; crystallising it freezes its practices."""
    ids = [
        api.ok("POST", "/v1/memory", {"text": text, "type": "task_pattern"})["crystal"]["id"]
        for text in (
            "To rebuild the search index: stop the worker, run reindex --all, start the worker",
            "To rebuild the search index stop the worker, run reindex --all, then start the worker",
            "Rebuild the search index: stop the worker, reindex --all, start the worker again",
        )
    ]
    found = wait_for(
        lambda: [e for e in api.ok("GET", "/v1/skills/emerging")["emerging"] if e["id"] == ids[0]],
        60, "the three practices to be embedded and found",
    )  # fmt: skip
    assert found[0]["occurrences"] == 3
    status, doc = api.call("POST", "/v1/skills/emerging/nothing-like-it/crystallise", {})
    assert status == 404 and "no emerging skill" in doc["error"]
    done = api.ok("POST", f"/v1/skills/emerging/{ids[0]}/crystallise", {})  # no text: its typical practice's
    assert done["skill"]["semantic_type"] == "skill" and done["frozen"] == 3
    assert done["skill"]["text"].startswith("Skill: ") and "reindex --all" in done["skill"]["text"]
    assert api.ok("GET", f"/v1/memory/{ids[1]}")["crystal"]["lifecycle"] == "frozen"


def test_maintenance_sharing_connecting_and_funding(api: Api) -> None:
    api.ok("POST", "/v1/memory", {"text": "Water the plants on Sunday", "type": "fact"})
    dry = api.ok("POST", "/v1/memory/consolidate", {"dry_run": True})
    assert dry["dry_run"] is True and dry["rescored"] >= 1
    assert api.ok("POST", "/v1/memory/consolidate")["dry_run"] is False
    status, doc = api.call("POST", "/v1/memory/no-such-crystal/unmerge")
    assert status == 400 and "was not merged" in doc["error"]
    private = api.ok("POST", "/v1/memory", {"text": "Drop caches: sync; echo 3 > drop_caches", "type": "skill"})
    status, doc = api.call("POST", f"/v1/skills/{private['crystal']['id']}/share", {})
    assert status == 403 and "it is private" in doc["error"]  # issue 13: private skills were gossiped
    skill = api.ok(
        "POST", "/v1/memory", {"text": "Flush DNS: resolvectl flush-caches", "type": "skill", "scope": "shared"}
    )
    shared = api.ok("POST", f"/v1/skills/{skill['crystal']['id']}/share", {"title": "Flush DNS"})
    assert shared["stable_skill_id"] and shared["version"] == 1
    status, doc = api.call("POST", "/v1/skills/endorsements", {"listing": "12D3KooWx/ops.flush-dns"})
    assert status == 400 and "management keys" in doc["error"]  # an edge node cannot endorse
    status, doc = api.call("POST", "/v1/peers/connect", {"address": "not a multiaddr"})
    assert status == 400 and doc["error"], doc
    funded = api.ok("POST", "/v1/wallet/fund", {"amount": "2.5"})  # the embedded chain is a dev chain
    assert funded["balance_micro_usdc"] == 2_500_000
    status, doc = api.call("POST", "/v1/wallet/fund", {"amount": "0.0000001"})
    assert status == 400 and "6 decimal" in doc["error"]
    nothing = api.ok("POST", "/v1/wallet/withdraw", {})  # no sales: nothing owed, nothing sent
    assert (nothing["withdrawn_micro_usdc"], nothing["owed_micro_usdc"]) == (0, 0)
    status, doc = api.call("POST", "/v1/wallet/withdraw", {"amount": "1"})
    assert status == 400 and "owes this node 0.000000 USDC, less than 1.000000 USDC" in doc["error"]


def test_the_dispute_commands_answer_for_what_this_node_holds(api: Api) -> None:
    unknown = "ab" * 32
    status, doc = api.call("POST", "/v1/skills/dispute", {"purchase_id": unknown})
    assert status == 400 and f"no purchase {unknown}" in doc["error"]
    status, doc = api.call("GET", f"/v1/skills/evidence?purchase_id={unknown}")
    assert status == 200 and doc["answered"] is False and "has not answered" in doc["summary"]
    status, doc = api.call("GET", "/v1/skills/purchases?limit=5")
    assert status == 200 and doc == {"purchases": [], "sales": [], "stuck": 0}
    status, doc = api.call("POST", "/v1/skills/arbitrate", {"purchase_id": unknown})
    assert status == 403 and "only the person decides this" in doc["error"]  # the agent never judges
    status, doc = api.call("POST", "/v1/skills/arbitrate", {"purchase_id": "not hex"}, token=api.owner_token)
    assert status == 400 and "purchase_id" in doc["error"]
    status, doc = api.call("POST", "/v1/skills/arbitrate", {"purchase_id": unknown}, token=api.owner_token)
    assert status == 400 and "not the escrow's arbiter" in doc["error"]  # the embedded escrow's is its deployer


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("POST", "/v1/memory", {"text": "x", "colour": "red"}, 400, "colour: Extra inputs are not permitted"),
        ("POST", "/v1/memory", {"text": ""}, 400, "text: String should have at least 1 character"),
        ("POST", "/v1/memory", {"text": "   "}, 400, "non-empty text"),
        ("POST", "/v1/memory", {"text": "x", "importance": 2}, 400, "importance: Input should be less than"),
        ("POST", "/v1/memory", {"text": "x", "ttl": "soon"}, 400, "soon"),
        ("POST", "/v1/memory/search", {"mode": "keyword"}, 400, "needs a query"),
        ("POST", "/v1/memory/search", {"query": "x", "limit": 0}, 400, "limit: Input should be greater than"),
        ("GET", "/v1/memory/no-such-crystal", None, 404, "no crystal 'no-such-crystal'"),
        ("GET", "/v1/working-memory/bootstrap?context_window=lots", None, 400, "context_window"),
        ("GET", "/v1/wallet?x=1", None, 400, "x: Extra inputs are not permitted"),
        ("POST", "/v1/hormones/events", {"events": ["joy"]}, 400, "events.0: Input should be"),
        ("POST", "/v1/skills/nope/executions", {"success": True}, 404, "nope"),
        ("GET", "/v1/nothing-here", None, 404, "Not Found"),
        # issue 32: a GET of the search answered 404 "no crystal 'search'"
        ("GET", "/v1/memory/search?query=x", None, 405, "/v1/memory/search takes POST"),
    ],
)
def test_bad_input_gets_a_clear_error(api: Api, method: str, path: str, body: Any, status: int, message: str) -> None:
    got, doc = api.call(method, path, body)
    assert got == status and message in doc["error"], doc


def test_list_is_newest_first_by_source_a_page_at_a_time(api: Api) -> None:
    for n in range(3):
        api.ok("POST", "/v1/memory", {"text": f"Wants gutter report number {n} by email", "type": "goal"})
    page = api.ok("POST", "/v1/memory/list", {"types": ["goal"], "limit": 2})
    assert [c["text"] for c in page["crystals"]] == [
        "Wants gutter report number 2 by email",
        "Wants gutter report number 1 by email",
    ]
    rest = api.ok("POST", "/v1/memory/list", {"types": ["goal"], "limit": 2, "offset": 2})
    assert [c["text"] for c in rest["crystals"]] == ["Wants gutter report number 0 by email"]
    assert api.ok("POST", "/v1/memory/list", {"source": "no/such/file.md"})["crystals"] == []


def test_erasing_for_good_is_the_persons_alone(api: Api) -> None:
    """Issue 32: forget left the text on disk; erase removes it, and only the person may."""
    crystal = api.ok("POST", "/v1/memory", {"text": "my old bank PIN was 4471, now changed"})["crystal"]
    status, doc = api.call("DELETE", f"/v1/memory/{crystal['id']}?erase=true")  # the agent's token
    assert status == 403 and "only the person" in doc["error"], doc
    status, doc = api.call("DELETE", f"/v1/memory/{crystal['id']}?erase=true", token=api.owner_token)
    assert status == 200 and doc == {"forgotten": crystal["id"], "erased": True, "contexts_scrubbed": 0}, doc
    assert api.call("GET", f"/v1/memory/{crystal['id']}")[0] == 404


def test_editing_keeps_the_old_text_and_only_the_person_edits_their_words(api: Api) -> None:
    """Issue 32: a memory's text could not be edited; now an edit is a new version, the old one kept."""
    status, made = api.call("POST", "/v1/memory", {"text": "My dentist is Dr. Hanssen"}, token=api.owner_token)
    person = made["crystal"]
    status, doc = api.call("POST", f"/v1/memory/{person['id']}/edit", {"text": "My dentist is Dr. Berg"})
    assert status == 403 and "is the person's own" in doc["error"], doc  # the agent's token
    status, edited = api.call(
        "POST", f"/v1/memory/{person['id']}/edit", {"text": "My dentist is Dr. Hansen"}, token=api.owner_token
    )
    assert status == 200 and edited["replaces"] == person["id"] and edited["origin"] == "user_input", edited
    shown = api.ok("GET", f"/v1/memory/{person['id']}")
    assert (
        shown["crystal"]["text"] == "My dentist is Dr. Hanssen" and shown["crystal"]["superseded"]["by"] == edited["id"]
    )
    status, doc = api.call("POST", f"/v1/memory/{person['id']}/edit", {"text": "again"}, token=api.owner_token)
    assert status == 409 and "edit that one" in doc["error"], doc
    hits = api.ok("POST", "/v1/memory/search", {"query": "dentist", "mode": "keyword"})
    assert [h["text"] for h in hits] == ["My dentist is Dr. Hansen"]


def test_a_body_over_the_limit_is_413_not_a_500(api: Api) -> None:
    """Issue 32: a body over 1 MiB got a 500 (and an error in the log)."""
    status, doc = api.call("POST", "/v1/memory", raw=b'{"text": "' + b"a" * 1_100_000 + b'"}')
    assert status == 413 and "larger than the API takes" in doc["error"], doc
    assert api.ok("GET", "/v1/status")["state"] == "running"


def test_a_body_that_is_not_json_is_refused(api: Api) -> None:
    status, doc = api.call("POST", "/v1/memory", raw=b"{not json")
    assert status == 400 and "not JSON" in doc["error"]
    status, doc = api.call("POST", "/v1/memory", raw=b"[1, 2]")
    assert status == 400 and "JSON object" in doc["error"]
    # Issue 13: nesting past the parser's recursion limit was a 500 with a traceback in the log.
    status, doc = api.call("POST", "/v1/memory", raw=b'{"text": ' + b"[" * 5_000 + b"]" * 5_000 + b"}")
    assert status == 400 and "nests too deeply" in doc["error"]
    status, doc = api.call("POST", "/v1/memory", raw=b"\xff\xfe{")
    assert status == 400 and "not JSON" in doc["error"]


def test_only_loopback_unless_the_config_says_so(tmp_path: Path) -> None:
    node = Node(tmp_path, "open", clean_env(BITTERBOT_API__HOST="0.0.0.0"))
    refused = node.cli("config", "check")
    assert refused.returncode == 2 and "allow_remote = true" in refused.stderr
    allowed = Node(tmp_path, "open", clean_env(BITTERBOT_API__HOST="0.0.0.0", BITTERBOT_API__ALLOW_REMOTE="true"))
    assert allowed.cli("config", "check").returncode == 0


def test_quarantine_review_routes(api: Api) -> None:
    assert api.ok("GET", "/v1/memory/quarantine") == []
    assert api.ok("GET", "/v1/memory/quarantine?status=rejected&limit=5") == []
    for verb in ("approve", "reject"):
        status, doc = api.call("POST", f"/v1/memory/not-held/{verb}", token=api.owner_token)
        assert status == 404 and "not-held" in doc["error"], doc
        # Issue 27: the agent's token approved and rejected held content itself.
        for headers in ({}, {"X-Bitterbot-Actor": "cli"}, {"X-Bitterbot-Actor": "dashboard"}):
            status, doc = api.call("POST", f"/v1/memory/not-held/{verb}", headers=headers)
            assert status == 403 and "only the person decides this" in doc["error"], doc
    status, doc = api.call("GET", "/v1/memory/quarantine?status=maybe")
    assert status == 400 and "status" in doc["error"], doc


def test_a_dashboard_login_url_needs_the_token_and_works_once(api: Api) -> None:
    assert api.call("POST", "/v1/ui/login", token="")[0] == 401
    status, doc = api.call("POST", "/v1/ui/login")  # the agent's token opens no session (issue 47)
    assert status == 403 and "only the person decides this" in doc["error"]
    status, doc = api.call("POST", "/v1/ui/login", token=api.owner_token)
    url = doc["url"]
    assert url.startswith(api.url + "/ui/login?code=")
    first = _status_and_headers(url)
    assert first[0] == 303 and "HttpOnly" in first[1].get("Set-Cookie", "")
    assert _status_and_headers(url)[0] == 401  # the same URL again
    assert "Set-Cookie" not in _status_and_headers(url)[1]


def _status_and_headers(url: str) -> tuple[int, dict[str, str]]:
    """The first answer to a GET, redirects not followed."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=30)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        response.read()
        return response.status, dict(response.getheaders())
    finally:
        connection.close()


def test_a_market_without_its_chain_is_unavailable_not_a_bad_request(tmp_path: Path) -> None:
    # Issue 29: "the marketplace has no chain" was a ValueError, so a 400, as if the request were wrong.
    env = clean_env(
        BITTERBOT_MEMORY__EMBEDDER="hashing",
        BITTERBOT_CHAIN__URL="http://127.0.0.1:9",  # nothing answers there: the market has no chain
        BITTERBOT_CHAIN__TOKEN_ADDRESS="0x" + "11" * 20,
        BITTERBOT_CHAIN__ESCROW_ADDRESS="0x" + "22" * 20,
    )
    node = Node(tmp_path, "chainless", env)
    assert node.cli("init").returncode == 0
    node.start()
    try:
        url = wait_for(lambda: api_url(node), 60, "the API to listen")
        api = Api(url, (node.data / "api.token").read_text().strip(), node)
        status, doc = api.call("POST", "/v1/skills/buy", {"listing": "some-skill"})
        assert status == 503 and "the marketplace has no chain" in doc["error"], (status, doc)
        refused = node.cli("skills", "buy", "some-skill")
        assert refused.returncode == 2 and "the marketplace has no chain" in refused.stderr
    finally:
        node.stop()


def test_the_devices_routes_are_the_persons_alone(api: Api) -> None:
    """Issue 51: pairing is the person's; the agent's token is refused every devices route."""
    for method, path, body in (
        ("POST", "/v1/devices/pair", None),
        ("POST", "/v1/devices/join", {"code": "BBPAIR1-AAAAAAAA-AAAA"}),
        ("GET", "/v1/devices", None),
        ("DELETE", "/v1/devices/laptop", None),
    ):
        status, doc = api.call(method, path, body)
        assert status == 403 and "only the person decides this" in doc["error"], (path, status, doc)
    status, listed = api.call("GET", "/v1/devices", token=api.owner_token)
    assert status == 200 and listed["group_id"] is None and listed["members"] == []
    status, doc = api.call("DELETE", "/v1/devices/laptop", token=api.owner_token)
    assert status == 400 and "in no device group" in doc["error"], doc
    status, opened = api.call("POST", "/v1/devices/pair", token=api.owner_token)
    assert status == 200 and opened["code"].startswith("BBPAIR1-"), opened
    status, doc = api.call("POST", "/v1/devices/join", {"code": opened["code"]}, token=api.owner_token)
    assert status == 400 and "this device's own code" in doc["error"], doc
