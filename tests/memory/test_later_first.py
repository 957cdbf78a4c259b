"""A later statement linked on save as a possible update of an older one goes above it in search,
even when the question does not find it by itself (issue 28, found by supersession_check8: "Closed
the Sabadell account, everything is at ING now" was nowhere in the hits for "Which bank do we use?").
Real store, MiniLM, supersession on save."""

from __future__ import annotations

from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin, SemanticType
from memory.retrieval.query import SearchRequest
from memory.retrieval.search import search
from tests.memory.conftest import DAY, FakeClock

OLD = "We bank with Sabadell."
NEW = "Closed the Sabadell account, everything is at ING now."
QUESTION = "Which bank do we use?"


async def _say(store: IntakeStore, clock: FakeClock, text: str, kind: SemanticType | None = None) -> str:
    clock.advance(DAY)
    return (await store.remember(NewCrystal(text, origin=Origin.USER_INPUT, semantic_type=kind))).crystal.id


async def _story(store: IntakeStore, clock: FakeClock, new_kind: SemanticType | None = None) -> tuple[str, str]:
    old = await _say(store, clock, OLD, SemanticType.FACT)
    for text in ("We have a joint account.", "We use the app for transfers.", "We pay the mortgage monthly."):
        await _say(store, clock, text)
    clock.advance(7 * DAY)
    return old, await _say(store, clock, NEW, new_kind)


async def test_a_later_possible_update_the_question_misses_is_brought_in_above(
    memory: IntakeStore, clock: FakeClock
) -> None:
    old, new = await _story(memory, clock)
    assert (await memory.get(old)).superseded is None  # nothing hidden: it may be an update, no more
    hits = await search(memory, SearchRequest(QUESTION, limit=10, touch=False, explain=True))
    ids = [h.crystal.id for h in hits]
    assert new in ids and old in ids and ids.index(new) == ids.index(old) - 1
    placed = next(h for h in hits if h.crystal.id == new)
    assert placed.explain is not None and placed.explain.ahead_of == old
    assert len(hits) <= 10


async def test_the_requests_filters_still_apply_to_what_is_brought_in(memory: IntakeStore, clock: FakeClock) -> None:
    old, new = await _story(memory, clock, SemanticType.EPISODE)
    only_facts = SearchRequest(QUESTION, limit=10, touch=False, types=frozenset({SemanticType.FACT}))
    assert old in [h.crystal.id for h in await search(memory, only_facts)]
    assert new not in [h.crystal.id for h in await search(memory, only_facts)]
    history = SearchRequest(QUESTION, limit=10, touch=False, include_superseded=True)
    assert new not in [h.crystal.id for h in await search(memory, history)]  # the ranking as stored


async def test_a_question_naming_the_older_value_keeps_it_first(memory: IntakeStore, clock: FakeClock) -> None:
    old = await _say(memory, clock, "We bank with Sabadell, the account ending 4471.", SemanticType.FACT)
    clock.advance(10 * DAY)
    new = await _say(memory, clock, NEW)
    assert (await memory.get(old)).superseded is None
    asked_for_it = await search(
        memory, SearchRequest("which bank is the account ending 4471 with", limit=10, touch=False)
    )
    assert asked_for_it[0].crystal.id == old
    hits = await search(memory, SearchRequest(QUESTION, limit=10, touch=False))
    assert [h.crystal.id for h in hits][:2] == [new, old]  # the same pair, asked without the figure


async def _voiced(store: IntakeStore, clock: FakeClock, text: str, voice: str) -> str:
    clock.advance(DAY)
    return (await store.remember(NewCrystal(text, origin=Origin.SESSION, voice=voice))).crystal.id


async def test_one_persons_news_never_goes_ahead_of_anothers_nor_a_passage_of_two(
    memory: IntakeStore, clock: FakeClock
) -> None:
    """Issue 52: among captured pieces, a later one went ahead of any earlier hit it might update,
    whoever said either: on a chat written apart, passages of two people's words went ahead of the
    answer to 6 of the top 10 of "Where did the group end up staying?"."""
    question = "What about the Sabadell bank account?"  # every piece is a hit
    old = await _voiced(memory, clock, f"Ana: {OLD}", "Ana")
    clock.advance(7 * DAY)
    theirs = await _voiced(memory, clock, f"Ben: {NEW}", "Ben")
    both = await _voiced(memory, clock, f"Ana: {NEW.replace('ING', 'Revolut')}\nBen: oh nice", "Ana")
    hits = await search(memory, SearchRequest(question, limit=10, touch=False, explain=True))
    ahead = {h.crystal.id: h.explain.ahead_of for h in hits if h.explain is not None}
    assert {old, theirs, both} <= set(ahead) and ahead[theirs] is None and ahead[both] is None, ahead
    clock.advance(DAY)
    mine = await _voiced(memory, clock, f"Ana: {NEW.replace('ING', 'Bunq')}", "Ana")  # her own news: ahead of hers
    hits = await search(memory, SearchRequest(question, limit=10, touch=False, explain=True))
    placed = next(h for h in hits if h.crystal.id == mine)
    assert placed.explain is not None and old in (placed.explain.ahead_of, placed.explain.in_place_of)
