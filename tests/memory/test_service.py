"""The memory services the commands call (``memory.service``), on a real store: what they refuse and
how the node answers it, who the caller is, the bounty finder the node hands down, and the upkeep
(``memory.service.upkeep``): what a consolidation cycle and a dream keep for ``status``, where their
durations and a search's go (real Prometheus histograms, as the daemon hands down), that a dry run
keeps nothing and that two dreams never overlap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Histogram

from ground.authority import NotAllowed, Speaker
from memory.cognition.curiosity import Curiosity
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import Event, HormoneSettings
from memory.dynamics.importance import DecaySettings
from memory.embedders import make_embedder
from memory.errors import InvalidRequest, NotEnabled
from memory.intake.store import IntakeStore
from memory.model import Bounty, NewCrystal, SemanticType
from memory.retrieval.query import SearchMode, Weights
from memory.service import history, hormones, recall, upkeep, write
from memory.service.caller import Caller
from memory.service.requests import (
    ConsolidateArgs,
    EventArgs,
    GapsArgs,
    RememberArgs,
    SearchArgs,
    ShowArgs,
    SupersedeArgs,
)
from memory.service.upkeep import Upkeep
from memory.storage.store import MemoryStore
from memory.working_memory.memory_md import WorkingMemoryFiles
from memory.working_memory.synthesis import ExtractiveSynthesizer
from node.error_status import http_status

PERSON = Caller("cli", Speaker.PERSON)
AGENT = Caller("agent", Speaker.AGENT)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[IntakeStore]:
    opened = await IntakeStore.open(tmp_path / "m.db", make_embedder("hashing"))
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_store_without_curiosity_answers_gaps_503_not_400(store: IntakeStore) -> None:
    with pytest.raises(NotEnabled) as refused:
        await recall.gaps(store, GapsArgs())
    assert http_status(refused.value) == 503  # as node.errors.NotEnabled answered before the move
    await Curiosity.attach(store)
    await recall.search(store, SearchArgs(query="zebra migration routes"), Weights(), record_gap=True)
    assert [g["query"] for g in await recall.gaps(store, GapsArgs())] == ["zebra migration routes"]


async def test_a_dashboard_search_records_no_gap(store: IntakeStore) -> None:
    await Curiosity.attach(store)
    await recall.search(store, SearchArgs(query="zebra migration routes"), Weights(), record_gap=False)
    assert await recall.gaps(store, GapsArgs()) == []


async def test_hormones_off_is_a_400_and_on_they_move(store: IntakeStore) -> None:
    with pytest.raises(InvalidRequest) as refused:
        hormones.levels(store)
    assert http_status(refused.value) == 400
    await Endocrine.attach(store, HormoneSettings())
    before = hormones.levels(store)["dopamine"]
    after = await hormones.observe(store, EventArgs(events=[Event.REWARD]))
    assert after["dopamine"] > before


async def test_the_agent_cannot_mark_the_persons_words_outdated(store: IntakeStore) -> None:
    mine = await write.remember(store, RememberArgs(text="My editor is Helix."), PERSON, answered_bounty=None)
    newer = await write.remember(store, RememberArgs(text="I use Zed now."), AGENT, answered_bounty=None)
    request = SupersedeArgs(id=mine["crystal"]["id"], by=newer["crystal"]["id"])
    with pytest.raises(NotAllowed):
        await history.supersede(store, request, AGENT)
    done = await history.supersede(store, request, PERSON)
    assert done["superseded"]["by"] == newer["crystal"]["id"]


async def test_what_the_agent_says_is_never_the_persons_input(store: IntakeStore) -> None:
    said = await write.remember(store, RememberArgs(text="Deploys go out on Fridays."), AGENT, answered_bounty=None)
    assert (said["crystal"]["origin"], said["crystal"]["speaker"]) == ("session", "agent")
    with pytest.raises(NotAllowed):  # pinning is directing, the person's alone
        await write.remember(store, RememberArgs(text="Always pin me.", pin=True), AGENT, answered_bounty=None)
    shown = await recall.show(store, ShowArgs(id=said["crystal"]["id"]))
    assert shown["crystal"]["id"] == said["crystal"]["id"]


async def test_a_skill_asks_the_finder_the_node_hands_down_and_records_its_bounty(store: IntakeStore) -> None:
    asked: list[tuple[str, tuple[str, ...], str]] = []

    async def finder(
        given: MemoryStore, *, text: str, tags: Iterable[str], category: str, now_ms: int
    ) -> Bounty | None:
        assert given is store and 0 < now_ms <= store.now_ms()  # the store's clock, read when the skill was stored
        asked.append((text, tuple(tags), category))
        return Bounty("b1", 2_000_000)

    skill = RememberArgs(text="Rotate nginx logs with logrotate -f", type=SemanticType.SKILL, tags=["nginx"],
                         category="ops")  # fmt: skip
    stored = await write.remember(store, skill, AGENT, answered_bounty=finder)
    assert asked == [("Rotate nginx logs with logrotate -f", ("nginx",), "ops")]
    assert stored["crystal"]["bounty"]["bounty_id"] == "b1"
    fact = await write.remember(store, RememberArgs(text="The logs grew to 2 GB."), AGENT, answered_bounty=finder)
    assert len(asked) == 1 and fact["crystal"]["bounty"] is None  # only a skill or pattern answers a bounty


class Timed:
    """Two real histograms in a registry of their own, and how many each has taken."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.consolidation = Histogram("consolidation_seconds", "cycles", registry=self.registry)
        self.dream = Histogram("dream_seconds", "dreams", registry=self.registry)
        self.search = Histogram("search_seconds", "searches", ["mode"], registry=self.registry)

    def count(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(f"{name}_count", labels) or 0.0


def _upkeep(tmp_path: Path, timed: Timed, counts: list[int]) -> Upkeep:
    return Upkeep(
        DecaySettings(),
        WorkingMemoryFiles(tmp_path / "workspace"),
        ExtractiveSynthesizer(),
        consolidation_seconds=timed.consolidation,
        dream_seconds=timed.dream,
        counted=counts.append,
    )


async def test_a_dry_run_keeps_nothing_and_a_cycle_is_kept_timed_and_counted(
    store: IntakeStore, tmp_path: Path
) -> None:
    timed, counts = Timed(), list[int]()
    cycles = _upkeep(tmp_path, timed, counts)
    await store.remember(NewCrystal("The dentist moved to Tuesday mornings"))
    dry = await upkeep.consolidate_now(store, cycles, ConsolidateArgs(dry_run=True))
    assert dry["dry_run"] is True
    assert cycles.last_consolidation is None and counts == [] and timed.count("consolidation_seconds") == 0
    done = await upkeep.consolidate_now(store, cycles, ConsolidateArgs())
    assert done["dry_run"] is False and "changes" in done
    assert cycles.last_consolidation is not None
    assert cycles.last_consolidation["dry_run"] is False and "changes" not in cycles.last_consolidation
    assert counts == [1] and timed.count("consolidation_seconds") == 1


async def test_a_dream_is_kept_for_status_and_timed(store: IntakeStore, tmp_path: Path) -> None:
    timed, counts = Timed(), list[int]()
    cycles = _upkeep(tmp_path, timed, counts)
    await store.remember(NewCrystal("I prefer tea to coffee in the afternoon"))
    doc = await upkeep.dream_now(store, cycles)
    assert cycles.last_dream == {k: doc[k] for k in ("at_ms", "accepted", "rejected_because", "notes_indexed")}
    assert timed.count("dream_seconds") == 1 and timed.count("consolidation_seconds") == 0


async def test_a_second_dream_waits_for_the_first(store: IntakeStore, tmp_path: Path) -> None:
    """The timer's dream and an agent's "dream now" never overlap: a second waits at the lock, and
    reads the world only once the first is done."""
    asked, first_inside, go_on = 0, asyncio.Event(), asyncio.Event()

    async def world(_: MemoryStore) -> tuple[str, ...]:
        nonlocal asked
        asked += 1
        if asked == 1:
            first_inside.set()
            await go_on.wait()
        return ()

    cycles = Upkeep(DecaySettings(), WorkingMemoryFiles(tmp_path / "w"), ExtractiveSynthesizer(), world=world)
    first = asyncio.create_task(upkeep.dream_now(store, cycles))
    await first_inside.wait()
    second = asyncio.create_task(upkeep.dream_now(store, cycles))
    try:
        for _ in range(20):  # the second task's turns: unlocked, it would read the world on its first
            await asyncio.sleep(0)
        waited = asked == 1 and not second.done()
    finally:  # both dreams end before the store closes, whatever was seen
        go_on.set()
        await asyncio.gather(first, second)
    assert waited and asked == 2


async def test_a_search_times_itself_under_its_mode(store: IntakeStore) -> None:
    timed = Timed()
    await recall.search(store, SearchArgs(query="tea", mode=SearchMode.KEYWORD), Weights(), times=timed.search)
    await recall.search(store, SearchArgs(query="tea", mode=SearchMode.KEYWORD), Weights())
    assert timed.count("search_seconds", mode="keyword") == 1
    assert timed.count("search_seconds", mode=SearchMode.VECTOR.value) == 0
