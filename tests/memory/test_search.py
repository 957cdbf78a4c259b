"""Search: every mode and filter, explain, access tracking, and governance on every path."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidQuery
from memory.fts import fts_query
from memory.intake.store import IntakeStore
from memory.model import CallerScope, Lifecycle, NewCrystal, Origin, Scope, SemanticType, Sensitivity
from memory.retrieval.query import (
    SearchMode,
    SearchRequest,
    SortKey,
    parse_bound,
    parse_since,
    reciprocal_rank_fusion,
)
from memory.retrieval.search import search
from tests.memory.conftest import DAY, T0, FakeClock

CORPUS = [
    ("Caroline went to the LGBTQ support group on Tuesday", SemanticType.EPISODE, Origin.SESSION, 10, 0.5),
    ("Melanie painted a sunrise over the lake last year", SemanticType.EPISODE, Origin.SESSION, 9, 0.3),
    ("Prefers oat milk in coffee", SemanticType.PREFERENCE, Origin.USER_INPUT, 5, 0.9),
    ("To rotate logs, run logrotate with the weekly config", SemanticType.SKILL, Origin.SKILL, 3, 0.6),
    ("Goal: finish the marathon training plan by June", SemanticType.GOAL, Origin.USER_INPUT, 1, 0.7),
    ("The support group meets in the community centre", SemanticType.FACT, Origin.INDEXED, 0, 0.4),
]


async def fill(store: IntakeStore) -> dict[str, str]:
    ids = {}
    for text, stype, origin, days_ago, importance in CORPUS:
        crystal = (
            await store.remember(
                NewCrystal(
                    text, semantic_type=stype, origin=origin, importance=importance, created_at_ms=T0 - days_ago * DAY
                )
            )
        ).crystal
        ids[text.split()[0]] = crystal.id
    return ids


async def test_hybrid_finds_by_keyword_and_explains_every_factor(store: IntakeStore) -> None:
    ids = await fill(store)
    hits = await search(store, SearchRequest("support group", explain=True))
    assert {h.crystal.id for h in hits[:2]} == {ids["Caroline"], ids["The"]}
    top = hits[0].explain
    assert top is not None
    assert top.keyword_rank is not None and top.vector_rank is not None
    assert top.final_score == pytest.approx(top.rrf * top.importance_factor * top.recency_factor, rel=1e-3)
    assert sorted(h.explain.fused_rank or 0 for h in hits if h.explain) == list(range(1, len(hits) + 1))
    assert hits == sorted(hits, key=lambda h: -h.score)


async def test_keyword_and_vector_modes_use_one_leg_each(store: IntakeStore) -> None:
    await fill(store)
    keyword = await search(store, SearchRequest("marathon", mode=SearchMode.KEYWORD, explain=True))
    assert len(keyword) == 1 and keyword[0].crystal.text.startswith("Goal")
    assert keyword[0].explain and keyword[0].explain.vector_rank is None
    vector = await search(store, SearchRequest("marathon training", mode=SearchMode.VECTOR, explain=True))
    assert vector[0].crystal.text.startswith("Goal")
    assert all(h.explain and h.explain.keyword_rank is None for h in vector)


async def test_recent_important_and_typed_orderings(store: IntakeStore) -> None:
    await fill(store)
    recent = await search(store, SearchRequest(mode=SearchMode.RECENT, limit=3))
    assert [h.crystal.text.split()[0] for h in recent] == ["The", "Goal:", "To"]
    important = await search(store, SearchRequest(mode=SearchMode.IMPORTANT, limit=2))
    assert [h.crystal.importance for h in important] == [0.9, 0.7]
    typed = await search(
        store, SearchRequest(mode=SearchMode.TYPED, types=frozenset({SemanticType.EPISODE}), sort=SortKey.IMPORTANCE)
    )
    assert [h.crystal.text.split()[0] for h in typed] == ["Caroline", "Melanie"]
    recent_matching = await search(store, SearchRequest("group", mode=SearchMode.RECENT))
    assert [h.crystal.text.split()[0] for h in recent_matching] == ["The", "Caroline"]


async def test_typed_sort_by_access_count(store: IntakeStore) -> None:
    ids = await fill(store)
    await store.touch([ids["Melanie"], ids["Melanie"]])
    await store.touch([ids["Melanie"]])
    typed = await search(
        store, SearchRequest(mode=SearchMode.TYPED, types=frozenset({SemanticType.EPISODE}), sort=SortKey.ACCESS_COUNT)
    )
    assert typed[0].crystal.id == ids["Melanie"]


async def test_time_type_origin_and_lifecycle_filters(store: IntakeStore, clock: FakeClock) -> None:
    ids = await fill(store)
    since = await search(store, SearchRequest(mode=SearchMode.RECENT, since_ms=parse_since("4d", clock())))
    assert {h.crystal.text.split()[0] for h in since} == {"The", "Goal:", "To"}
    typed = await search(store, SearchRequest("group", types=frozenset({SemanticType.FACT})))
    assert [h.crystal.id for h in typed] == [ids["The"]]
    by_origin = await search(store, SearchRequest("group", origins=frozenset({Origin.SESSION})))
    assert by_origin[0].crystal.id == ids["Caroline"]
    assert {h.crystal.origin for h in by_origin} == {Origin.SESSION}
    await store.transition(ids["Melanie"], Lifecycle.FROZEN, reason="pin", actor="t")
    frozen = await search(store, SearchRequest(mode=SearchMode.RECENT, lifecycles=frozenset({Lifecycle.FROZEN})))
    assert [h.crystal.id for h in frozen] == [ids["Melanie"]]


async def test_archived_hidden_by_default_and_expired_never(store: IntakeStore) -> None:
    ids = await fill(store)
    await store.transition(ids["Caroline"], Lifecycle.ARCHIVED, reason="merged", actor="t")
    await store.forget(ids["The"])
    default = await search(store, SearchRequest("support group"))
    assert ids["Caroline"] not in {h.crystal.id for h in default}
    archived = await search(store, SearchRequest("support group", include_archived=True))
    assert ids["Caroline"] in {h.crystal.id for h in archived}
    for mode in SearchMode:
        request = SearchRequest(
            "support group community centre",
            mode=mode,
            include_archived=True,
            types=frozenset(SemanticType) if mode is SearchMode.TYPED else None,
        )
        assert ids["The"] not in {h.crystal.id for h in await search(store, request)}, mode
    with pytest.raises(InvalidQuery, match="never returned"):
        SearchRequest("x", lifecycles=frozenset({Lifecycle.EXPIRED}))


async def test_every_hit_counts_as_an_access(store: IntakeStore, clock: FakeClock) -> None:
    ids = await fill(store)
    clock.advance(5_000)
    await search(store, SearchRequest("marathon"))
    await search(store, SearchRequest("marathon training"))
    await store.flush_access()
    goal = await store.get(ids["Goal:"])
    assert (goal.access_count, goal.last_access_ms, goal.lifecycle) == (2, T0 + 5_000, Lifecycle.ACTIVATED)
    await search(store, SearchRequest("marathon", touch=False))
    await store.flush_access()
    assert (await store.get(ids["Goal:"])).access_count == 2


async def test_recorded_accesses_are_written_by_the_flusher_and_at_close(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "m.db"
    first = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
    crystal = (await first.remember(NewCrystal("flushed in the background"))).crystal
    first.record_access([crystal.id])
    async with asyncio.timeout(5):  # the flusher writes it without anyone waiting for it
        while (await first.get(crystal.id)).access_count != 1:  # noqa: ASYNC110 - polling the file is the check
            await asyncio.sleep(0.01)
    first.record_access([crystal.id, crystal.id])
    await first.close()  # at once: whatever the flusher has not written yet, close() writes
    again = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
    try:
        assert (await again.get(crystal.id)).access_count == 3
    finally:
        await again.close()


async def test_confidential_never_reaches_a_shared_caller_on_any_path(store: IntakeStore) -> None:
    secret = (await store.remember(NewCrystal("deploy password: hunter2hunter2", scope=Scope.SHARED))).crystal
    shared = (await store.remember(NewCrystal("deploy checklist for friday", scope=Scope.SHARED))).crystal
    await store.remember(NewCrystal("deploy contact dana@example.org", scope=Scope.PUBLIC))  # personal: never public
    public = (await store.remember(NewCrystal("deploy guide is public", scope=Scope.PUBLIC))).crystal
    assert secret.sensitivity is Sensitivity.CONFIDENTIAL
    for mode in (SearchMode.HYBRID, SearchMode.KEYWORD, SearchMode.VECTOR, SearchMode.RECENT, SearchMode.IMPORTANT):
        seen_shared = {
            h.crystal.id for h in await search(store, SearchRequest("deploy", mode=mode, caller=CallerScope.SHARED))
        }
        assert secret.id not in seen_shared and shared.id in seen_shared, mode
        seen_public = {
            h.crystal.id for h in await search(store, SearchRequest("deploy", mode=mode, caller=CallerScope.PUBLIC))
        }
        assert seen_public == {public.id}, mode
        seen_local = {h.crystal.id for h in await search(store, SearchRequest("deploy", mode=mode))}
        assert secret.id in seen_local, mode


def test_fts_query_quotes_terms_and_drops_stopwords() -> None:
    assert fts_query("What did Caroline do at the support group?") == '"caroline" OR "support" OR "group"'
    assert fts_query('NEAR(a b) OR "x" AND y*') == '"near" OR "b" OR "x" OR "y"'
    assert fts_query("the and of") is None


def test_parse_since() -> None:
    now = T0
    assert parse_since("24h", now) == now - DAY
    assert parse_since("7d", now) == now - 7 * DAY
    assert parse_since("30m", now) == now - 1_800_000
    assert parse_since("2026-01-01", now) == T0
    with pytest.raises(InvalidQuery, match="cannot read time"):
        parse_since("yesterday-ish", now)


def test_since_and_until_take_what_queries_take() -> None:
    """Issue 32: ``--since yesterday`` was refused though a query understands "yesterday"."""
    now = T0 + DAY // 2  # midday of 2026-01-01
    assert parse_bound("yesterday", now) == T0 - DAY
    assert parse_bound("yesterday", now, until=True) == T0
    assert parse_bound("24h", now) == now - DAY  # the forms that were there stay
    with pytest.raises(InvalidQuery, match="words such as yesterday"):
        parse_bound("whenever", now)


def test_rrf_against_hand_computed_values() -> None:
    scores = reciprocal_rank_fusion([[1, 2, 3], [3, 1]], k=60)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 62)
    assert scores[2] == pytest.approx(1 / 62)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    weighted = reciprocal_rank_fusion([[1, 2, 3], [3, 1]], k=10, weights=[1.0, 0.7])
    assert weighted[1] == pytest.approx(1 / 11 + 0.7 / 12)
    assert weighted[3] == pytest.approx(1 / 13 + 0.7 / 11)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": ""}, "needs a query"),
        ({"mode": SearchMode.TYPED}, "semantic type"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "since_ms": 5, "until_ms": 1}, "since is after until"),
    ],
)
def test_bad_requests_are_refused_clearly(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidQuery, match=message):
        SearchRequest(**kwargs)  # type: ignore[arg-type]


async def test_keyword_cost_is_bounded_rarest_terms_first(store: IntakeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small numbers stand in for 20,000 crystals and a 6,000-match budget (issue 17's p95 fix).
    from memory.retrieval import search as searching

    monkeypatch.setattr(searching, "PRUNE_ABOVE_DOCS", 10)
    monkeypatch.setattr(searching, "KEYWORD_MATCH_BUDGET", 8)
    common = [(await store.remember(NewCrystal(f"weather note number {i} about rain"))).crystal.id for i in range(30)]
    rare = (await store.remember(NewCrystal("the kayak is stored in the boathouse"))).crystal.id
    # A rare word beside a common one: the common word is left out of the keyword leg.
    hits = await search(store, SearchRequest("rain kayak", mode=SearchMode.KEYWORD, touch=False))
    assert [h.crystal.id for h in hits] == [rare]
    # Only common words: keyword matches are ranked among the newest crystals (the budget's worth).
    hits = await search(store, SearchRequest("weather rain", mode=SearchMode.KEYWORD, limit=50, touch=False))
    assert hits and {h.crystal.id for h in hits} <= set(common[-8:])
    # Without the bound every match is ranked.
    monkeypatch.setattr(searching, "PRUNE_ABOVE_DOCS", 10_000)
    hits = await search(store, SearchRequest("weather rain", mode=SearchMode.KEYWORD, limit=50, touch=False))
    assert {h.crystal.id for h in hits} == set(common)
