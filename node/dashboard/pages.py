"""What each dashboard page shows: its context, built from the node's own commands.

A part that is off on this node (P2P, the market) shows as off on the page, never as an error.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from aiohttp import web

from marketplace.pricing import format_usdc
from memory.dynamics.importance import DAY_MS, DecaySettings, importance
from memory.entities.recognise import Kind as EntityKind
from memory.errors import CrystalNotFound
from memory.model import Feedback, SemanticType
from memory.retrieval.query import SearchMode
from memory.working_memory.memory_md import MARKER
from node.dashboard.charts import Series, bar_chart, line_chart, trust_graph
from node.dashboard.history import History, part_details
from node.errors import PartOff


class Dashboard(Protocol):
    """What a page needs of the dashboard (``node.dashboard.web.Dashboard``): the node's commands
    and the history its charts draw."""

    history: History
    decay: DecaySettings
    dream_every_min: float
    now_ms: Callable[[], int]

    async def run(self, name: str, args: Mapping[str, Any] | None = None) -> Any: ...


PageBuilder = Callable[[Dashboard, web.Request], Awaitable[dict[str, Any]]]
#: The search form's fields that are passed on as they are (the rest are lists or flags).
SEARCH_TEXT_FIELDS = ("query", "since", "until")
SEARCH_FLAGS = ("include_superseded", "include_held", "include_archived", "explain")
CRYSTAL_ACTIONS = ("pin", "forget", "retype", "feedback", "approve", "reject", "unsupersede", "crystallise")


def when(ms: int | None) -> str:
    """A timestamp for a person (local time), or a dash."""
    return "-" if not ms else time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def usdc(micro: int | None) -> str:
    return "-" if micro is None else format_usdc(micro)


async def _maybe(dashboard: Dashboard, name: str, args: Mapping[str, Any] | None = None) -> Any:
    """A command's answer, or None when its part is off on this node."""
    try:
        return await dashboard.run(name, args)
    except PartOff:
        return None


async def live_overview(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    """The overview's counters, polled by the page: parts, peers, weather, hormones, memory."""
    status = await dashboard.run("status")
    p2p, memory = part_details(status, "p2p"), part_details(status, "memory")
    return {
        "state": status["state"],
        "peer_id": status["peer_id"],
        "parts": status["parts"],
        "crystals": (await dashboard.run("memory.count"))["count"],
        "embedding": memory.get("embedding") or {},
        "capture": memory.get("capture"),  # None: no folder is watched ([capture] watch)
        "hormones": memory.get("hormones") or {},
        "last_consolidation": memory.get("last_consolidation"),
        "last_dream": memory.get("last_dream"),
        "peers": (p2p.get("peers") or {}),
        "messages": p2p.get("messages") or {},
        "weather": await _maybe(dashboard, "weather.show"),
        "market": part_details(status, "market").get("summary"),
        # Background loops restarted after a failure (issue 48): count, last error, when, by task.
        "restarts": (status.get("details") or {}).get("restarts") or {},
        "updated_at_ms": status["updated_at_ms"],
    }


def _time_chart(series: list[Series], history: History, title: str, y_max: float | None = None) -> str:
    span = history.span_ms()
    ends = (when(span[0]), when(span[1])) if span else ("", "")
    return line_chart(series, title=title, x_labels=ends, y_max=y_max)


async def overview(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    history = dashboard.history
    hormones = history.hormones()
    return {
        "page": "overview",
        "live": await live_overview(dashboard, request),
        "hormone_chart": _time_chart(hormones, history, "Hormone levels, the last 24 hours", 1.0),
        "hormone_names": [s.name for s in hormones],
    }


async def working_memory(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    status = await dashboard.run("status")
    wm = await dashboard.run("wm.show")
    last_dream = part_details(status, "memory").get("last_dream")
    return {
        "page": "working",
        "wm": wm,
        "last_dream": last_dream,
        # A dream writes its marker into MEMORY.md: it ran before, if not since this daemon started.
        "dreamt": last_dream is not None or MARKER in wm["memory_md"],
        "dream_every_min": dashboard.dream_every_min,
        "emerging": (await dashboard.run("skills.emerging", {"limit": 20}))["emerging"],
    }


async def network(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    status = await dashboard.run("status")
    peers = await _maybe(dashboard, "peers")
    history = dashboard.history
    verdicts = history.verdicts()
    return {
        "page": "network",
        "p2p": part_details(status, "p2p") or None,  # None: P2P is off
        "peers": peers,
        "graph": trust_graph(status["peer_id"], peers or [], title="Trust: this node and its peers"),
        "verdict_chart": _time_chart(verdicts, history, "Messages accepted and refused per topic, per minute"),
        "verdict_names": [s.name for s in verdicts],
        "weather": await _maybe(dashboard, "weather.show"),
        "held": await dashboard.run("memory.quarantine", {"limit": 50}),
    }


async def market(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    wallet = await _maybe(dashboard, "wallet")
    listings = await _maybe(dashboard, "skills.list", {"limit": 50}) or []
    ledger = (wallet or {}).get("ledger") or {}
    earned = [(day["day"], day["earned_micro_usdc"] / 1_000_000) for day in ledger.get("trend", [])]
    return {
        "page": "market",
        "wallet": wallet,
        "ledger": ledger,
        "earnings_chart": bar_chart(earned, title="Earnings per day, USDC"),
        "listings": [item for item in listings if not item["mine"]],
        "own_listings": [item for item in listings if item["mine"]],
        "bounties": await _maybe(dashboard, "bounties.list", {"limit": 50}) or [],
    }


def search_args(query: Mapping[str, str], multi: Callable[[str], list[str]]) -> dict[str, Any] | None:
    """The memory command's arguments from the search form, or None when nothing was asked."""
    if not any(query.get(k) for k in ("query", "mode")):
        return None
    args: dict[str, Any] = {k: query[k] for k in SEARCH_TEXT_FIELDS if query.get(k)}
    args["mode"] = query.get("mode") or SearchMode.HYBRID.value
    args["limit"] = query.get("limit") or 20
    args["detail"] = "full"  # the page shows every field
    types = [t for t in multi("types") if t]
    if types:
        args["types"] = types
    for flag in SEARCH_FLAGS:
        if query.get(flag):
            args[flag] = True
    return args


async def memory(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    args = search_args(request.query, lambda key: request.query.getall(key, []))
    hits = await dashboard.run("memory.search", args) if args is not None else None
    # Before any search the page lists the newest crystals (it listed nothing until one searched).
    newest = (await dashboard.run("memory.list", {"limit": 20, "detail": "full"}))["crystals"] if args is None else None
    return {
        "newest": newest,
        "page": "memory",
        "form": dict(request.query),
        "chosen_types": set(request.query.getall("types", [])),
        "modes": [m.value for m in SearchMode],
        "types": [t.value for t in SemanticType],
        "hits": hits,
        "stats": await dashboard.run("memory.stats"),
    }


async def entities(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    """Who and what memory names, most named first; with a name, what memory knows about it (issue 52)."""
    name = request.match_info.get("name")
    return {
        "page": "entities",
        "kind": request.query.get("kind", ""),
        "entities": await dashboard.run("memory.entities", {"limit": 200, **_kind(request.query.get("kind"))}),
        "about": await dashboard.run("memory.entity", {"name": name, "limit": 50}) if name else None,
        "kinds": [k.value for k in EntityKind],
    }


def _kind(kind: str | None) -> dict[str, str]:
    return {"kind": kind} if kind in {k.value for k in EntityKind} else {}


CURVE_AHEAD_MS = 30 * DAY_MS
CURVE_POINTS = 48


def importance_curve(c: Mapping[str, Any], decay: DecaySettings, now_ms: int) -> Series:
    """A crystal's importance as the decay model has it: from when it was last reinforced (stored
    or retrieved) to 30 days ahead if nothing reinforces it. Consolidation stores the same formula's
    value, so the part up to now is what the node computed, and the rest is its forecast."""
    start = int(c.get("last_access_ms") or c["stored_at_ms"])
    end = max(now_ms, start) + CURVE_AHEAD_MS
    decays = c["semantic_type"] != "skill" and c["lifespan"] != "permanent" and c["lifecycle"] != "frozen"

    def at(t: int) -> float:
        return importance(
            access_count=int(c["access_count"]), reinforced_at_ms=start, now_ms=t,
            valence=float(c["emotional_valence"]), decays=decays, decay_rate_per_ms=decay.decay_rate_per_ms,
            emotion_decay_resistance=decay.emotion_decay_resistance, curiosity_boost=float(c["curiosity_boost"]),
            steering_reward=float(c["steering_reward"]), floor=float(c["importance_floor"]),
        )  # fmt: skip

    times = [start + (end - start) * i // (CURVE_POINTS - 1) for i in range(CURVE_POINTS)]
    return Series("importance", [(t, at(t)) for t in times])


async def _newer_text(dashboard: Dashboard, crystal: Mapping[str, Any]) -> str | None:
    """The text of the crystal that replaced this one (None if it is current, or gone since)."""
    if not crystal.get("superseded"):
        return None
    try:
        newer = await dashboard.run("memory.show", {"id": crystal["superseded"]["by"]})
    except CrystalNotFound:
        return None
    return str(newer["crystal"]["text"])


def _maybe_outdated(shown: Mapping[str, Any]) -> str | None:
    """The latest "maybe outdated" note in the attribution chain: text that was not the person's
    read like an update of this, and only the person decides (``memory.supersession.authority``)."""
    notes = [a["detail"] for a in shown["attribution"] if a["action"] == "maybe_outdated" and a.get("detail")]
    return str(notes[-1]) if notes else None


async def crystal(dashboard: Dashboard, request: web.Request) -> dict[str, Any]:
    shown = await dashboard.run("memory.show", {"id": request.match_info["id"]})
    curve = importance_curve(shown["crystal"], dashboard.decay, dashboard.now_ms())
    first, last = curve.points[0][0], curve.points[-1][0]
    return {
        "page": "memory",
        "shown": shown,
        "c": shown["crystal"],
        "importance_chart": line_chart(
            [curve],
            title="Importance over time, by the decay model",
            x_labels=(when(int(first)), when(int(last))),
            y_max=1.0,
        ),
        "forget_below": dashboard.decay.forget_threshold,
        "newer_text": await _newer_text(dashboard, shown["crystal"]),
        "maybe_outdated": _maybe_outdated(shown),
        "types": [t.value for t in SemanticType],
        "feedbacks": [f.value for f in Feedback],
    }


async def crystal_action(dashboard: Dashboard, crystal_id: str, action: str, form: Mapping[str, str | None]) -> str:
    """Run a crystal page's button; where the browser goes next."""
    if action not in CRYSTAL_ACTIONS:
        raise web.HTTPNotFound()
    if action == "forget":
        await dashboard.run("memory.forget", {"id": crystal_id, "reason": "forgotten in the dashboard"})
        return "/ui/memory"
    if action == "crystallise":  # ``crystal_id`` names an emerging skill: its first practice
        done = await dashboard.run("skills.crystallise", {"skill_id": crystal_id})
        return f"/ui/memory/{done['skill']['id']}"
    if action in ("approve", "reject"):
        await dashboard.run(f"memory.quarantine.{action}", {"id": crystal_id})
        return "/ui/network"  # back to the queue
    if action == "pin":
        await dashboard.run("memory.pin", {"id": crystal_id})
    elif action == "unsupersede":
        await dashboard.run("memory.unsupersede", {"id": crystal_id})
    elif action == "retype":
        await dashboard.run("memory.retype", {"id": crystal_id, "type": form.get("type")})
    else:
        await dashboard.run("memory.feedback", {"id": crystal_id, "feedback": form.get("feedback")})
    return f"/ui/memory/{crystal_id}"


async def devices(dashboard: Dashboard, request: web.Request, opened: dict[str, Any] | None = None) -> dict[str, Any]:
    """The person's device group, and a pairing code with its QR code right after "Pair a device"."""
    from node.commands.texts.devices import qr_svg, sync_words

    group = await _maybe(dashboard, "devices.list")  # None: P2P is off, so no pairing
    for member in group["members"] if group else []:
        member["sync_words"] = sync_words(member["sync"], member["this_device"])
    return {
        "page": "devices",
        "group": group,
        "opened": opened,
        "qr": qr_svg(opened["code"]) if opened else None,
    }
