"""The memory operations an agent uses, in one place: JSON-shaped requests in, JSON-shaped answers out.

The daemon's command table (the HTTP API, the control socket, the MCP server) and the CLI
(opening the store directly when no daemon runs) call these same functions, with the request
models of ``node.commands.memory_requests``.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, replace
from typing import Any

from ground.authority import Capability, Speaker, require
from marketplace.catalog.bounties import answered_bounty
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import Event
from memory.governance import quarantine
from memory.governance.erase import erase
from memory.governance.rules import classify_sensitivity
from memory.graph import associations, attribution_chain, derivation_tree
from memory.intake.store import IntakeStore
from memory.model import KNOWLEDGE_TYPES, Crystal, Lifespan, NewCrystal, Origin, Sensitivity
from memory.retrieval.query import SearchMode, SearchRequest, Weights, parse_bound, parse_since
from memory.retrieval.search import search
from memory.skill_versions import skill_of
from memory.storage.crystal_queries import audit_trail
from memory.storage.store import MemoryStore
from memory.supersession.authority import is_the_persons
from memory.transfer.records import crystal_fields
from memory.working_memory.memory_md import WorkingMemoryFiles
from node.actor import speaker_of
from node.commands.memory_requests import (
    Filters,
    ForgetArgs,
    InvalidRequest,
    ListArgs,
    QuarantineArgs,
    RememberArgs,
    SearchArgs,
    ShowArgs,
)


def crystal_json(crystal: Crystal) -> dict[str, Any]:
    return crystal_fields(crystal)


async def remember(store: IntakeStore, args: RememberArgs, *, actor: str) -> dict[str, Any]:
    try:
        ttl_ms = -parse_since(args.ttl, 0) if args.ttl else None
        if args.pin and ttl_ms:
            raise InvalidRequest("a pinned memory is kept for good: give --pin or --ttl, not both")
        skill = skill_of(args.text, args.type, args.tags, args.category)
        # The agent can be talked into anything: what it stores is never the person's own words,
        # which alone outrank the person's statements (``ground.authority``), whatever origin it names.
        speaker = speaker_of(actor)
        origin = Origin.SESSION if speaker is not Speaker.PERSON and args.origin is Origin.USER_INPUT else args.origin
        if args.pin:
            require(speaker, Capability.DIRECT, "memory.remember --pin")
        new = NewCrystal(
            args.text,
            semantic_type=args.type,
            origin=origin,
            # A stated importance is kept as a floor (README, "Keep this"); unstated, the default.
            importance=args.importance if args.importance is not None else 0.5,
            importance_floor=args.importance or 0.0,
            scope=args.scope,
            lifespan=Lifespan.PERMANENT if args.pin else Lifespan.TTL if ttl_ms else Lifespan.DECAY,
            skill=skill,
            ttl_ms=ttl_ms,
            actor=actor,
            speaker=speaker,
        )
    except ValueError as exc:  # InvalidQuery (the ttl) is one too
        raise InvalidRequest(str(exc)) from None
    if args.type in KNOWLEDGE_TYPES:  # a skill stored here records the live bounty it answers
        bounty = await answered_bounty(
            store, text=args.text, tags=skill.tags if skill else (), category=args.category or "", now_ms=store.now_ms()
        )
        new = replace(new, bounty=bounty)
    result = await store.remember(new)
    return {"created": result.created, "crystal": crystal_json(result.crystal)}


async def search_memory(
    store: MemoryStore, args: SearchArgs, weights: Weights, *, record_gap: bool = True
) -> list[dict[str, Any]]:
    request = SearchRequest(
        args.query,
        weights=weights,
        mode=args.mode,
        limit=args.limit,
        sort=args.sort,
        include_held=args.include_held,
        explain=args.explain,
        record_gap=record_gap,
        **_filters(args, store.now_ms()),
    )
    return [
        {
            "score": h.score,
            "crystal": crystal_json(h.crystal),
            "explain": asdict(h.explain) if h.explain else None,
            "replaces": h.replaces,
        }
        for h in await search(store, request)
    ]


def _filters(args: Filters, now_ms: int) -> dict[str, Any]:
    """The filters search and list share, as ``SearchRequest`` fields."""
    return {
        "since_ms": parse_bound(args.since, now_ms) if args.since else None,
        "until_ms": parse_bound(args.until, now_ms, until=True) if args.until else None,
        "types": frozenset(args.types) or None,
        "origins": frozenset(args.origins) or None,
        "tags": frozenset(args.tags) or None,
        "source": args.source,
        "include_archived": args.include_archived,
        "include_superseded": args.include_superseded,
    }


async def list_crystals(store: MemoryStore, args: ListArgs) -> dict[str, Any]:
    """A page of crystals, newest first: the ordered search, without a query and without counting
    as accesses."""
    request = SearchRequest(
        mode=SearchMode.RECENT,
        limit=args.limit,
        offset=args.offset,
        touch=False,
        record_gap=False,
        **_filters(args, store.now_ms()),
    )
    found = await search(store, request)
    return {"crystals": [crystal_json(h.crystal) for h in found], "offset": args.offset, "limit": args.limit}


async def show(store: MemoryStore, args: ShowArgs) -> dict[str, Any]:
    from memory.capture.sources import captured_from

    crystal = await store.get(args.id)
    sources = (await captured_from(store, [args.id])).get(args.id, [])
    return {
        "crystal": crystal_json(crystal),
        # the conversation messages a captured crystal came from: ids where the format had them, else '#position'
        "captured_from": [{"session": s.session, "messages": list(s.messages)} for s in sources],
        "associations": [{**asdict(a), "type": a.type.value} for a in await associations(store, args.id)],
        "derivation": asdict(await derivation_tree(store, args.id)),
        "attribution": [asdict(a) for a in await attribution_chain(store, args.id)],
        # a bought or gossiped skill held for the person: where it is and how to release it (issue 49)
        "held": quarantine.review_note(await quarantine.hold_of(store, args.id)),
        "audit": [
            dict(zip(("from", "to", "reason", "actor", "ts_ms"), t, strict=True))
            for t in await audit_trail(store, args.id)
        ],
    }


async def forget(store: MemoryStore, args: ForgetArgs, *, actor: str) -> dict[str, Any]:
    if args.erase:
        require(speaker_of(actor), Capability.ERASE, "memory.forget --erase")
        erased = await erase(store, args.id, actor=actor, reason=args.reason)
        return {"forgotten": erased.crystal_id, "erased": True, "contexts_scrubbed": erased.contexts_scrubbed}
    await refuse_unless_may_override(store, args.id, "forgetting it", speaker_of(actor))
    crystal = await store.forget(args.id, actor=actor, reason=args.reason)
    return {"forgotten": crystal.id, "erased": False}


async def refuse_unless_may_override(store: MemoryStore, crystal_id: str, doing: str, speaker: Speaker) -> None:
    """The authority table's ``OVERRIDE_PERSON``, asked for the crystal ``doing`` touches when the
    person said it (``NotAllowed``: the command's audit line names the caller)."""
    if is_the_persons(await store.get(crystal_id)):
        require(speaker, Capability.OVERRIDE_PERSON, f"{crystal_id} is the person's own; {doing}")


async def quarantine_list(store: MemoryStore, args: QuarantineArgs) -> list[dict[str, Any]]:
    return [
        {
            "crystal": crystal_json(item.crystal),
            "source": item.source,
            "reason": item.reason,
            "flags": list(item.flags),
            "status": item.status.value,
            "received_ms": item.received_ms,
            "decided_ms": item.decided_ms,
            "decided_by": item.decided_by,
        }
        for item in await quarantine.held(store, status=args.status, limit=args.limit)
    ]


async def quarantine_approve(store: MemoryStore, args: ShowArgs, *, actor: str) -> dict[str, Any]:
    return {"approved": crystal_json(await quarantine.approve(store, args.id, actor=actor))}


async def quarantine_reject(store: MemoryStore, args: ShowArgs, *, actor: str) -> dict[str, Any]:
    await quarantine.reject(store, args.id, actor=actor)
    return {"rejected": args.id}


def hormone_doc(store: MemoryStore) -> dict[str, Any]:
    """The hormonal state: effective levels, the local cortisol, any network override."""
    source = _endocrine(store)
    state = source.state()
    levels = source.levels()
    override = state.override
    return {
        "dopamine": round(levels.dopamine, 4),
        "cortisol": round(levels.cortisol, 4),
        "oxytocin": round(levels.oxytocin, 4),
        "local_cortisol": round(state.cortisol, 4),
        "network_override": None
        if override is None
        else {"level": override.level, "until_ms": override.until_ms, "reason": override.reason},
        "halts_untrusted_ingestion": source.halts_untrusted_ingestion(),
    }


async def observe_events(store: MemoryStore, events: list[Event]) -> dict[str, Any]:
    """Tell the hormonal state what just happened; returns the state after."""
    await _endocrine(store).observe(events)
    return hormone_doc(store)


def _endocrine(store: MemoryStore) -> Endocrine:
    source = store.hormone_source
    if not isinstance(source, Endocrine):
        raise InvalidRequest("the hormonal state is off for this store")
    return source


def working_memory_report(files: WorkingMemoryFiles) -> dict[str, Any]:
    """MEMORY.md, the difference from the version before the last dream, and the waiting scratch
    notes; a confidential note's text stays out (it never reaches MEMORY.md either)."""
    current, previous = files.read_text(), files.read_text(previous=True)
    diff = difflib.unified_diff(
        previous.splitlines(), current.splitlines(), "before the last dream", "now", lineterm=""
    )
    notes = [
        {"at": n.at, "importance": n.importance, "confidential": secret, "text": None if secret else n.text}
        for n in files.scratch.read().notes
        for secret in [classify_sensitivity(n.text) is Sensitivity.CONFIDENTIAL]
    ]
    return {"memory_md": current, "changed_by_last_dream": list(diff) if previous else [], "scratch": notes}
