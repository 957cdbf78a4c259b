"""Time named in a query, and search favouring what was said then (issue 17, time-aware scoring)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin
from memory.retrieval.query import SearchRequest
from memory.retrieval.search import search
from memory.when import time_asked, time_window
from tests.memory.conftest import DAY, FakeClock

NOW = int(datetime(2026, 3, 18, 15, 0, tzinfo=UTC).timestamp() * 1000)  # a Wednesday


def day(text: str) -> str:
    return datetime.fromtimestamp(int(text) / 1000, tz=UTC).strftime("%Y-%m-%d")


@pytest.mark.parametrize(
    ("query", "first", "days"),
    [
        ("what did I eat yesterday", "2026-03-17", 1),
        ("what did I cook last Friday?", "2026-03-13", 1),
        ("the plan we made on Wednesday", "2026-03-11", 1),  # the one before today
        ("who called two weeks ago", "2026-03-01", 7),
        ("notes from last week", "2026-03-09", 7),
        ("what happened last weekend", "2026-03-14", 2),
        ("the budget in February", "2026-02-01", 28),
        ("trip in November", "2025-11-01", 30),  # the most recent November
        ("the talk on 8 May 2023", "2023-05-08", 1),
        ("dinner on March 2nd", "2026-03-02", 1),
        ("what we decided last month", "2026-02-01", 28),
    ],
)
def test_time_window_reads_the_time_a_query_names(query: str, first: str, days: int) -> None:
    window = time_window(query, NOW)
    assert window is not None
    assert day(str(window.start_ms)) == first and (window.end_ms - window.start_ms) == days * DAY


@pytest.mark.parametrize("query", ["where does Tomas live", "may I ask about the boiler", "what is the wifi password"])
def test_a_query_naming_no_time_has_no_window(query: str) -> None:
    assert time_window(query, NOW) is None


async def test_search_favours_what_was_said_in_the_time_the_query_names(store: IntakeStore, clock: FakeClock) -> None:
    clock.now = NOW - 5 * DAY  # Friday 13 March
    friday = (await store.remember(NewCrystal("I cooked lentil soup for dinner", origin=Origin.SESSION))).crystal
    clock.now = NOW - 1 * DAY  # Tuesday
    tuesday = (await store.remember(NewCrystal("I cooked pasta for dinner", origin=Origin.SESSION))).crystal
    clock.now = NOW
    plain = await search(store, SearchRequest("what did I cook for dinner", touch=False))
    assert plain[0].crystal.id == tuesday.id  # no time named: the newer one, by recency
    named = await search(store, SearchRequest("what did I cook for dinner last Friday", touch=False, explain=True))
    assert named[0].crystal.id == friday.id
    assert named[0].explain is not None and named[0].explain.time_factor == 1.5
    other = next(h for h in named if h.crystal.id == tuesday.id)
    assert other.explain is not None and other.explain.time_factor == 1.0


async def test_the_time_a_crystal_names_is_resolved_when_it_is_said(store: IntakeStore, clock: FakeClock) -> None:
    said = int(datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp() * 1000)
    went = (
        await store.remember(NewCrystal("I went to a support group yesterday, it was powerful", created_at_ms=said))
    ).crystal
    assert went.refers_to is not None and day(str(went.refers_to[0])) == "2023-05-07"
    other = (await store.remember(NewCrystal("I went to the gym, it was powerful", created_at_ms=said))).crystal
    assert other.refers_to is None
    hits = await search(store, SearchRequest("where I went on 7 May 2023", touch=False, explain=True))
    assert hits[0].crystal.id == went.id
    assert hits[0].explain is not None and hits[0].explain.time_factor == 1.5
    assert next(h for h in hits if h.crystal.id == other.id).explain.time_factor == 1.0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("query", "when"),
    [
        ("When did Divya move into her flat?", True),
        ("Where and on what date was the birthday celebrated?", True),
        ("which month did the demo move to", True),
        ("how long ago did she start?", True),
        ("What does Caroline's sister do?", False),
        ("Who persuaded Divya to cycle to work?", False),
    ],
)
def test_a_question_that_asks_when_is_read_as_one(query: str, when: bool) -> None:
    asked = time_asked(query, NOW)
    assert (asked is not None and asked.when) is when
    assert asked is None or asked.window is None  # none of these names a span


async def test_a_question_that_asks_when_favours_words_that_name_a_time(memory: IntakeStore, clock: FakeClock) -> None:
    """Issue 52: "When did they view flats in Bristol?" missed "maybe 14 October? I've got 3 lined up
    that day", which names the day, below turns about Bristol that name none."""
    clock.now = NOW
    said = ("I've got three flat viewings in Bristol lined up on 14 October",
            "Bristol flats are brutal, about 1000 a month for a one bed")  # fmt: skip
    dated, undated = [(await memory.remember(NewCrystal(t, origin=Origin.SESSION))).crystal for t in said]
    assert dated.refers_to is not None and undated.refers_to is None
    hits = await search(memory, SearchRequest("When are the flat viewings in Bristol?", touch=False, explain=True))
    factors = {h.crystal.id: h.explain.time_factor for h in hits if h.explain is not None}
    assert factors == {dated.id: pytest.approx(1.3), undated.id: 1.0}
    plain = await search(memory, SearchRequest("Where are the flat viewings in Bristol?", touch=False, explain=True))
    assert {h.explain.time_factor for h in plain if h.explain is not None} == {1.0}  # asks where, not when
