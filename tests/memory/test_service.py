"""The memory services the commands call (``memory.service``), on a real store: what they refuse and
how the node answers it, who the caller is, and the bounty finder the node hands down."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import pytest

from ground.authority import NotAllowed, Speaker
from memory.cognition.curiosity import Curiosity
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import Event, HormoneSettings
from memory.embedders import make_embedder
from memory.errors import InvalidRequest, NotEnabled
from memory.intake.store import IntakeStore
from memory.model import Bounty, SemanticType
from memory.retrieval.query import Weights
from memory.service import history, hormones, recall, write
from memory.service.caller import Caller
from memory.service.requests import EventArgs, GapsArgs, RememberArgs, SearchArgs, ShowArgs, SupersedeArgs
from memory.storage.store import MemoryStore
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
        assert given is store and now_ms == store.now_ms()
        asked.append((text, tuple(tags), category))
        return Bounty("b1", 2_000_000)

    skill = RememberArgs(text="Rotate nginx logs with logrotate -f", type=SemanticType.SKILL, tags=["nginx"],
                         category="ops")  # fmt: skip
    stored = await write.remember(store, skill, AGENT, answered_bounty=finder)
    assert asked == [("Rotate nginx logs with logrotate -f", ("nginx",), "ops")]
    assert stored["crystal"]["bounty"]["bounty_id"] == "b1"
    fact = await write.remember(store, RememberArgs(text="The logs grew to 2 GB."), AGENT, answered_bounty=finder)
    assert len(asked) == 1 and fact["crystal"]["bounty"] is None  # only a skill or pattern answers a bounty
