"""Reading memory: search, a page of crystals, one crystal with its links, curiosity gaps and counts.
Nothing here writes, except what a search itself records (accesses, a gap it could not fill)."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from memory.capture.sources import captured_from
from memory.cognition.curiosity import Curiosity
from memory.entities import view as entity_view
from memory.entities.index import index_owed
from memory.errors import EntityNotFound, NotEnabled
from memory.governance import quarantine
from memory.graph.provenance import associations, attribution_chain, derivation_tree
from memory.retrieval.query import SearchMode, SearchRequest, Weights, parse_bound
from memory.retrieval.search import search as run_search
from memory.service.requests import (
    CountArgs,
    EntitiesArgs,
    EntityArgs,
    Filters,
    GapsArgs,
    ListArgs,
    SearchArgs,
    ShowArgs,
)
from memory.service.timing import DurationsByMode
from memory.storage.counts import crystal_total
from memory.storage.crystal_queries import audit_trail
from memory.storage.store import MemoryStore
from memory.transfer.records import crystal_fields


async def search(
    store: MemoryStore,
    args: SearchArgs,
    weights: Weights,
    *,
    record_gap: bool = True,
    times: DurationsByMode | None = None,
) -> list[dict[str, Any]]:
    """The hits of a search, best first, each with its score, its crystal's every field, the scores
    it is made of (``explain``) and what it replaces. ``record_gap``: whether finding nothing
    relevant opens a curiosity gap; ``times`` is given the search's duration under its mode."""
    started = time.perf_counter()
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
    hits = [
        {
            "score": h.score,
            "crystal": crystal_fields(h.crystal),
            "explain": asdict(h.explain) if h.explain else None,
            "replaces": h.replaces,
        }
        for h in await run_search(store, request)
    ]
    if times is not None:
        times.labels(args.mode.value).observe(time.perf_counter() - started)
    return hits


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
    found = await run_search(store, request)
    return {"crystals": [crystal_fields(h.crystal) for h in found], "offset": args.offset, "limit": args.limit}


async def show(store: MemoryStore, args: ShowArgs) -> dict[str, Any]:
    """One crystal with where it came from, its links, its provenance, its hold and its audit trail."""
    crystal = await store.get(args.id)
    sources = (await captured_from(store, [args.id])).get(args.id, [])
    return {
        "crystal": crystal_fields(crystal),
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


async def gaps(store: MemoryStore, args: GapsArgs) -> list[dict[str, Any]]:
    """Curiosity gaps, most asked first (or those since filled); ``NotEnabled`` when the store runs
    without curiosity."""
    curiosity = store.curiosity
    if not isinstance(curiosity, Curiosity):
        raise NotEnabled("curiosity is off for this store")
    return [asdict(g) for g in await curiosity.gaps(limit=args.limit, closed=args.closed)]


async def entities(store: MemoryStore, args: EntitiesArgs) -> list[dict[str, Any]]:
    """The people, places, organisations, projects and things memory names most (``memory.entities``)."""
    await index_owed(store)  # what was written a moment ago is named too
    kind = args.kind.value if args.kind else None
    return [e.as_dict() for e in await entity_view.named_most(store, kind=kind, limit=args.limit)]


async def entity(store: MemoryStore, args: EntityArgs) -> dict[str, Any]:
    """What memory knows about one entity: the memories that name it (newest first), its aliases,
    what belongs to it and who else is named beside it. ``EntityNotFound`` when nothing current does."""
    await index_owed(store)
    found = await entity_view.about(store, args.name, limit=args.limit)
    if found is None:
        raise EntityNotFound(args.name)
    return {
        "entity": found.entity.as_dict(),
        "aliases": list(found.aliases),
        "memories": [{"crystal": crystal_fields(c)} for c in found.crystals],
        "belongs": [e.as_dict() for e in found.belongs],
        "related": [e.as_dict() for e in found.related],
    }


async def count(store: MemoryStore, args: CountArgs) -> dict[str, Any]:
    """How many crystals memory holds (of one type, if given)."""
    kind = args.type.value if args.type else None
    return {"count": await crystal_total(store.reader(), kind), "type": kind}


async def stats(store: MemoryStore) -> dict[str, Any]:
    """Counts by lifecycle, type, origin and sensitivity; the embedding backlog; the file's size."""
    return await store.stats()
