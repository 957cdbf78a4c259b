"""Running a search against the store: every mode, every filter, governance on every path.

Hybrid: BM25 over FTS5, KNN over the active embedder's vec0 table and the entity graph
(``memory.retrieval.graph_leg``), each taking a candidate pool, fused by reciprocal rank
(``memory.retrieval.query``). The KNN
runs alone and its rowids are filtered afterwards; because filters can remove
candidates, the KNN asks for more when filters are active.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any
from weakref import WeakKeyDictionary

import aiosqlite

from memory.dynamics.hormones import retrieval_modulation
from memory.embedders.base import Vectors
from memory.fts import fts_match, fts_query, fts_terms
from memory.governance.rules import visibility_sql
from memory.model import Crystal, Hormones
from memory.retrieval.bounty_rank import with_bounty_boosts
from memory.retrieval.graph_leg import graph_leg, named_by_question
from memory.retrieval.later_first import Scored, later_updates, newer_first, place_later_updates
from memory.retrieval.query import (
    SUPERSEDED_FACTOR,
    Explain,
    SearchHit,
    SearchMode,
    SearchRequest,
    SortKey,
    Weights,
    importance_factor,
    rank_factor,
    recency_factor,
    reciprocal_rank_fusion,
    time_factor,
)
from memory.storage.rows import SELECT_COLUMNS, crystal_from_row
from memory.storage.store import MemoryStore
from memory.supersession.chains import current_of
from memory.when import TimeAsked, time_asked

CANDIDATE_POOL = 50
MAX_KNN = 1000


def _filters(request: SearchRequest, now_ms: int, *, current_only: bool) -> tuple[str, dict[str, Any]]:
    """The WHERE clause every mode shares: governance plus the request's filters. ``current_only``:
    leave out superseded crystals (those current at the end of a time filter stay)."""
    clause, params = visibility_sql(
        request.caller, include_archived=request.include_archived, include_held=request.include_held
    )
    parts = [clause]
    params["now_ms"] = now_ms
    if request.since_ms is not None:
        parts.append("c.created_at_ms >= :since_ms")
        params["since_ms"] = request.since_ms
    if request.until_ms is not None:
        parts.append("c.created_at_ms <= :until_ms")
        params["until_ms"] = request.until_ms
    if current_only:
        parts.append(_CURRENT if request.until_ms is not None else "c.superseded_by IS NULL")
    for i, tag in enumerate(sorted(request.tags or ())):  # tags are stored space-separated
        parts.append(f"(' ' || c.tags || ' ') LIKE :tag_{i} ESCAPE '\\'")
        params[f"tag_{i}"] = "% " + tag.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + " %"
    if request.source is not None:
        parts.append("c.source = :source")
        params["source"] = request.source
    for name, values in (
        ("semantic_type", request.types),
        ("origin", request.origins),
        ("lifecycle", request.lifecycles),
    ):
        if values:
            keys = [f"{name}_{i}" for i in range(len(values))]
            parts.append(f"c.{name} IN ({', '.join(':' + k for k in keys)})")
            params.update(zip(keys, sorted(v.value for v in values), strict=True))
    return " AND ".join(parts), params


#: Current at the end of the time filter: not superseded, or superseded after it ended.
_CURRENT = "(c.superseded_by IS NULL OR c.superseded_ms > :until_ms)"


def _has_extra_filters(request: SearchRequest) -> bool:
    return bool(
        request.since_ms
        or request.until_ms
        or request.tags
        or request.source is not None
        or request.types
        or request.origins
        or request.lifecycles
        or request.caller.value != "local"
    )


# Keyword cost bound. BM25 scores every document that matches any term (~2 us each at 100K
# crystals), so a query with a word found in a quarter of memory cost 50-240 ms (the p95 and p99
# of the issue-17 profile) while such a word, by its IDF, barely ranks anything. On stores larger
# than PRUNE_ABOVE_DOCS, terms are kept rarest first while their matches add up to at most
# KEYWORD_MATCH_BUDGET; a query whose every term is commoner than that ranks its keyword matches
# among the newest KEYWORD_MATCH_BUDGET crystals (the vector leg still searches all of them).
PRUNE_ABOVE_DOCS = 20_000
KEYWORD_MATCH_BUDGET = 6_000
# BM25 column weights: text and tags count fully, a crystal's context (its neighbours) at 0.35,
# the best of 0.2 / 0.35 / 0.5 on LoCoMo.
CONTEXT_WEIGHT = 0.35


class TermCounts:
    """How many crystals match a term, up to the budget, remembered while memory grows by less than
    1 % (a term's count barely moves; counting two terms cost ~3 ms of a 100K search's p50)."""

    MAX_TERMS = 4_096

    def __init__(self) -> None:
        self._known: OrderedDict[str, tuple[int, int]] = OrderedDict()

    async def matches(self, db: aiosqlite.Connection, term: str, size: int) -> int:
        known = self._known.get(term)
        if known is not None and abs(size - known[1]) <= size // 100:
            self._known.move_to_end(term)
            return known[0]
        # A bounded count: stops past the budget, so probing a common term stays cheap.
        async with db.execute(
            "SELECT count(*) FROM (SELECT rowid FROM crystals_fts WHERE crystals_fts MATCH ? LIMIT ?)",
            (fts_match([term]), KEYWORD_MATCH_BUDGET + 1),
        ) as cursor:
            count = int((await cursor.fetchone() or (0,))[0])
        self._known[term] = (count, size)
        if len(self._known) > self.MAX_TERMS:
            self._known.popitem(last=False)
        return count


#: One per open store (a store that closes takes its counts with it).
_TERM_COUNTS: WeakKeyDictionary[MemoryStore, TermCounts] = WeakKeyDictionary()


async def _prune_common_terms(store: MemoryStore, db: aiosqlite.Connection, terms: list[str]) -> tuple[list[str], int]:
    """The terms to rank by, and the rowid above which to rank (0: all of memory)."""
    async with db.execute("SELECT coalesce(max(rowid), 0) FROM crystals") as cursor:
        size = int((await cursor.fetchone() or (0,))[0])
    if size <= PRUNE_ABOVE_DOCS:
        return terms, 0
    counts = _TERM_COUNTS.setdefault(store, TermCounts())
    counted = [(await counts.matches(db, term, size), term) for term in terms]
    kept, spent = [], 0
    for count, term in sorted(counted):
        if spent + count > KEYWORD_MATCH_BUDGET:
            break
        kept.append(term)
        spent += count
    if kept:
        return [t for t in terms if t in kept], 0
    return terms, max(0, size - KEYWORD_MATCH_BUDGET)


async def _keyword_leg(
    store: MemoryStore,
    db: aiosqlite.Connection,
    terms: list[str],
    where: str,
    params: dict[str, Any],
    limit: int,
    filtered: bool,
) -> list[tuple[int, float]]:
    # BM25 alone, then the filters on its rowids: joining every match to crystals before ranking
    # cost ~95 ms at 100K rows for common words, the bare FTS query a fraction of that.
    kept, from_rowid = await _prune_common_terms(store, db, terms)
    match = fts_match(kept)
    if match is None:
        return []
    k = min(MAX_KNN, limit * (8 if filtered else 2))
    async with db.execute(
        "SELECT rowid, bm25(crystals_fts, 1.0, 1.0, ?) AS score FROM crystals_fts "
        "WHERE crystals_fts MATCH ? AND rowid > ? ORDER BY score LIMIT ?",
        (CONTEXT_WEIGHT, match, from_rowid, k),
    ) as cursor:
        ranked = [(int(r[0]), float(r[1])) for r in await cursor.fetchall()]
    allowed = await _allowed(db, [rowid for rowid, _ in ranked], where, params)
    return [(rowid, score) for rowid, score in ranked if rowid in allowed][:limit]


async def _allowed(db: aiosqlite.Connection, rowids: list[int], where: str, params: dict[str, Any]) -> set[int]:
    """Which of ``rowids`` pass governance and the request's filters."""
    if not rowids:
        return set()
    marks = ", ".join(f":r{i}" for i in range(len(rowids)))
    async with db.execute(
        f"SELECT c.rowid FROM crystals c WHERE c.rowid IN ({marks}) AND {where}",
        {**params, **{f"r{i}": rowid for i, rowid in enumerate(rowids)}},
    ) as cursor:
        return {int(r[0]) for r in await cursor.fetchall()}


async def _vector_leg(
    store: MemoryStore, query_vector: Vectors, where: str, params: dict[str, Any], limit: int, filtered: bool
) -> list[tuple[int, float]]:
    k = min(MAX_KNN, limit * (8 if filtered else 1))
    db = store.reader()
    neighbours = await store.vectors.knn(db, query_vector, k)
    allowed = await _allowed(db, [rowid for rowid, _ in neighbours], where, params)
    return [(rowid, sim) for rowid, sim in neighbours if rowid in allowed][:limit]


async def search(store: MemoryStore, request: SearchRequest) -> list[SearchHit]:
    """Run ``request``. Unless ``request.touch`` is False each hit counts as an access; the count is
    written by the store's flusher just after (durable by ``flush_access`` or close), so the write
    is not part of the search's latency. Ranked modes return only relevant hits (a query word, or
    ``relevance_floor`` similarity); when none is, a caller's search records a curiosity gap. With a
    hormonal state attached, its retrieval modulation scales the importance and recency weights
    (``memory.dynamics.hormones``)."""
    now = store.now_ms()
    if store.hormone_source is not None:
        request = replace(request, weights=modulated(request.weights, store.hormone_source.levels()))
    ranked = request.mode in (SearchMode.HYBRID, SearchMode.KEYWORD, SearchMode.VECTOR)
    # Ranked modes find superseded crystals too, to show the current one in their place.
    where, params = _filters(request, now, current_only=not ranked and not request.include_superseded)
    hits = (
        await _ranked(store, request, where, params, now) if ranked else await _ordered(store, request, where, params)
    )
    if request.touch and hits:
        store.record_access([h.crystal.id for h in hits])  # only relevant hits are left to count
    elif request.touch and request.record_gap and ranked and request.query and store.curiosity is not None:
        await store.curiosity.record_gap(request.query)  # memory could not answer: a curiosity gap
    return hits


def modulated(weights: Weights, levels: Hormones) -> Weights:
    """Dopamine boosts the weight of importance; cortisol biases toward recent crystals."""
    modulation = retrieval_modulation(levels)
    return replace(
        weights,
        importance_weight=weights.importance_weight * modulation.importance_boost,
        recency_weight=weights.recency_weight * modulation.recency_bias,
    )


async def _ranked(
    store: MemoryStore, request: SearchRequest, where: str, params: dict[str, Any], now: int
) -> list[SearchHit]:
    assert request.query is not None  # checked by SearchRequest
    pool = max(CANDIDATE_POOL, request.limit * 3)
    terms = fts_terms(request.query)
    tasks: list[asyncio.Task[Any]] = []
    keyword_task = named_task = None
    if request.mode is not SearchMode.VECTOR and terms:
        # Each leg on its own reader connection (own thread): they run side by side.
        keyword_task = asyncio.create_task(
            _keyword_leg(store, store.reader(), terms, where, params, pool, _has_extra_filters(request))
        )
        tasks.append(keyword_task)
    if request.mode is SearchMode.HYBRID and request.weights.graph_weight > 0:
        named_task = asyncio.create_task(named_by_question(store.reader(), request.query))
        tasks.append(named_task)
    vector: list[tuple[int, float]] = []
    try:
        if request.mode is not SearchMode.KEYWORD:
            query_vector = await asyncio.to_thread(store.embedder.embed_query, request.query)
            vector = await _vector_leg(store, query_vector, where, params, pool, _has_extra_filters(request))
        keyword = await keyword_task if keyword_task else []
        named = await named_task if named_task else None
    except BaseException:
        # A leg failed (an embedder down): the others are ours to stop, not to orphan.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    legs = [[r for r, _ in keyword], [r for r, _ in vector]]
    leg_weights = [1.0, request.weights.vector_weight]
    graph: list[tuple[int, float]] = []
    if named is not None:
        prior = reciprocal_rank_fusion(legs, k=request.weights.rrf_k, weights=leg_weights)
        db = store.reader()

        async def allowed(rowids: list[int]) -> set[int]:
            return await _allowed(db, rowids, where, params)

        graph = await graph_leg(db, named, allowed, pool, prior)
        legs.append([r for r, _ in graph])
        leg_weights.append(request.weights.graph_weight)
    fused = reciprocal_rank_fusion(legs, k=request.weights.rrf_k, weights=leg_weights)
    keyword_at = {rowid: (rank, score) for rank, (rowid, score) in enumerate(keyword, start=1)}
    vector_at = {rowid: (rank, sim) for rank, (rowid, sim) in enumerate(vector, start=1)}
    graph_at = {rowid: (rank, score) for rank, (rowid, score) in enumerate(graph, start=1)}
    floor = request.weights.relevance_floor
    window = time_asked(request.query, now)  # "last Friday", "in March", "when did": favour what fits
    # Score every candidate from the few columns scoring needs; read whole crystals only for the
    # best (building ~100 crystals a query cost ~5 ms of the p50 at 100K).
    factors = await _scoring_factors(store.reader(), list(fused))
    ranked: list[tuple[float, int]] = []
    for rowid, rrf in fused.items():
        if rowid not in factors:
            continue
        if rowid not in keyword_at and rowid not in graph_at and vector_at[rowid][1] < floor:
            continue  # found by meaning alone, and not near enough: junk, not an answer
        ranked.append((_factors(rrf, *factors[rowid], request.weights, now, window)[0], rowid))
    ranked.sort(key=lambda item: (-item[0], item[1]))
    # Room for superseded hits that give their place away, and for the search-time ordering.
    best = [rowid for _, rowid in ranked[: request.limit * 2 + 10]]
    rows = await store.get_many_by_rowid(best)
    scored = [_score(rowid, rows[rowid], fused[rowid], request, now, window) for rowid in best if rowid in rows]
    asked = _Asked(store, request, where, params, now, window)
    scored = with_bounty_boosts(await _current_first(asked, scored))
    if not request.include_superseded:
        scored = await _with_later_updates(asked, scored)
        await newer_first(store, scored, request)
    fused_order = {rowid: i for i, rowid in enumerate(sorted(fused, key=lambda r: (-fused[r], r)), start=1)}
    hits = []
    for entry in scored[: request.limit]:
        explain = None
        if request.explain:
            kw, vec, by_graph = keyword_at.get(entry.rowid), vector_at.get(entry.rowid), graph_at.get(entry.rowid)
            explain = Explain(
                keyword_rank=kw[0] if kw else None,
                keyword_score=round(kw[1], 4) if kw else None,
                vector_rank=vec[0] if vec else None,
                vector_similarity=round(vec[1], 4) if vec else None,
                rrf=round(entry.rrf, 6),
                importance_factor=round(entry.importance, 4),
                recency_factor=round(entry.recency, 4),
                time_factor=round(entry.time, 4),
                steering_factor=round(rank_factor(entry.crystal.steering_reward), 4),
                fused_rank=fused_order.get(entry.rowid),
                final_score=round(entry.final, 6),
                in_place_of=entry.in_place_of,
                ahead_of=entry.ahead_of,
                superseded_by=_replaced_by(entry),
                superseded_factor=entry.superseded_factor,
                bounty_factor=round(entry.bounty, 4),
                graph_rank=by_graph[0] if by_graph else None,
                graph_score=round(by_graph[1], 4) if by_graph else None,
            )
        hits.append(SearchHit(entry.crystal, entry.final, explain, replaces=entry.in_place_of))
    return hits


def _factors(
    rrf: float,
    importance: float,
    created_at_ms: int,
    steering: float,
    refers_to: tuple[int, int] | None,
    weights: Weights,
    now: int,
    window: TimeAsked | None,
) -> tuple[float, float, float, float]:
    """The final score and its importance, recency and time factors (``memory.retrieval.query``)."""
    imp = importance_factor(importance, weights)
    rec = recency_factor(created_at_ms, now, weights)
    when = time_factor(created_at_ms, refers_to, window, weights)
    return rrf * imp * rec * when * rank_factor(steering), imp, rec, when


def _score(
    rowid: int, crystal: Crystal, rrf: float, request: SearchRequest, now: int, window: TimeAsked | None
) -> Scored:
    final, imp, rec, when = _factors(
        rrf, crystal.importance, crystal.created_at_ms, crystal.steering_reward, crystal.refers_to,
        request.weights, now, window,
    )  # fmt: skip
    return Scored(final, rowid, crystal, rrf, imp, rec, time=when)


Factors = tuple[float, int, float, tuple[int, int] | None]


async def _scoring_factors(db: aiosqlite.Connection, rowids: list[int]) -> dict[int, Factors]:
    """Importance, creation time, steering reward and the time named of each of ``rowids``."""
    if not rowids:
        return {}
    marks = ", ".join("?" * len(rowids))
    async with db.execute(
        "SELECT rowid, importance, created_at_ms, steering_reward, refers_from_ms, refers_until_ms "
        f"FROM crystals WHERE rowid IN ({marks})",
        tuple(rowids),
    ) as cursor:
        return {
            int(r[0]): (float(r[1]), int(r[2]), float(r[3]), (int(r[4]), int(r[5])) if r[4] is not None else None)
            for r in await cursor.fetchall()
        }


def _replaced_by(entry: Scored) -> str | None:
    """What replaced a superseded hit kept by ``include_superseded``."""
    superseded = entry.crystal.superseded
    return superseded.by if superseded is not None and entry.superseded_factor != 1.0 else None


def _stale(crystal: Crystal, request: SearchRequest) -> bool:
    """Superseded, and not current at the end of the request's time filter."""
    superseded = crystal.superseded
    return superseded is not None and (request.until_ms is None or superseded.at_ms <= request.until_ms)


@dataclass(frozen=True, slots=True)
class _Asked:
    """One request as it is being ranked: what brings a crystal the query did not find into it."""

    store: MemoryStore
    request: SearchRequest
    where: str
    params: dict[str, Any]
    now: int
    window: TimeAsked | None

    async def visible(self, ids: list[str]) -> dict[str, Scored]:
        """Of ``ids``, those the request's filters let it see, scored as found by neither leg."""
        found = await _visible_by_id(self.store.reader(), ids, self.where, self.params)
        return {c.id: _score(rowid, c, 0.0, self.request, self.now, self.window) for rowid, c in found.items()}


async def _current_first(asked: _Asked, scored: list[Scored]) -> list[Scored]:
    """Each superseded hit gives its place to the crystal current now (which keeps the better of the
    two scores); with ``include_superseded`` it stays too, at ``SUPERSEDED_FACTOR`` of its score. A
    current crystal the request's filters leave out does not come in."""
    request = asked.request
    stale = [entry for entry in scored if _stale(entry.crystal, request)]
    if not stale:
        return scored
    heads = await current_of(asked.store.reader(), [entry.crystal.id for entry in stale])
    present = {entry.crystal.id: entry for entry in scored}
    present.update(await asked.visible(sorted({head for head in heads.values() if head not in present})))
    kept = [entry for entry in scored if not _stale(entry.crystal, request)]
    pulled_in: dict[str, Scored] = {}
    for entry in stale:
        head = present.get(heads.get(entry.crystal.id, ""))
        if head is not None and entry.final > head.final:
            head.final = entry.final
            head.in_place_of = entry.crystal.id
        if head is not None and head not in kept:
            pulled_in[head.crystal.id] = head
        if request.include_superseded:
            entry.final *= SUPERSEDED_FACTOR
            entry.superseded_factor = SUPERSEDED_FACTOR
            kept.append(entry)
    return kept + list(pulled_in.values())


async def _with_later_updates(asked: _Asked, scored: list[Scored]) -> list[Scored]:
    """``memory.retrieval.later_first.place_later_updates``, with the later statements linked to the
    hits shown that the request's filters let it see."""
    shown = {entry.crystal.id for entry in scored[: asked.request.limit]}
    links = await later_updates(asked.store.reader(), sorted(shown))
    candidates = await asked.visible(sorted({later for later, _, _ in links if later not in shown}))
    return place_later_updates(scored, candidates, links, asked.request)


async def _visible_by_id(
    db: aiosqlite.Connection, ids: list[str], where: str, params: dict[str, Any]
) -> dict[int, Crystal]:
    if not ids:
        return {}
    marks = ", ".join(f":id{i}" for i in range(len(ids)))
    async with db.execute(
        f"SELECT c.rowid, {SELECT_COLUMNS} FROM crystals c WHERE c.id IN ({marks}) AND {where}",
        {**params, **{f"id{i}": cid for i, cid in enumerate(ids)}},
    ) as cursor:
        return {int(r[0]): crystal_from_row(r[1:]) for r in await cursor.fetchall()}


_ORDER = {
    SortKey.RECENCY: "c.created_at_ms DESC, c.rowid DESC",
    SortKey.IMPORTANCE: "c.importance DESC, c.created_at_ms DESC",
    SortKey.ACCESS_COUNT: "c.access_count DESC, c.created_at_ms DESC",
}


async def _ordered(store: MemoryStore, request: SearchRequest, where: str, params: dict[str, Any]) -> list[SearchHit]:
    sort = {SearchMode.RECENT: SortKey.RECENCY, SearchMode.IMPORTANT: SortKey.IMPORTANCE}.get(
        request.mode, request.sort
    )
    match = fts_query(request.query) if request.query else None
    source = "crystals c"
    if match is not None:
        source = "crystals_fts JOIN crystals c ON c.rowid = crystals_fts.rowid"
        where = f"crystals_fts MATCH :match AND {where}"
        params = {**params, "match": match}
    sql = f"SELECT {SELECT_COLUMNS} FROM {source} WHERE {where} ORDER BY {_ORDER[sort]} LIMIT :limit OFFSET :offset"
    async with store.reader().execute(sql, {**params, "limit": request.limit, "offset": request.offset}) as cursor:
        rows = list(await cursor.fetchall())
    return [SearchHit(crystal_from_row(r), float(len(rows) - i)) for i, r in enumerate(rows)]
