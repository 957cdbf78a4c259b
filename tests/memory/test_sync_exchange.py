"""The sync exchange (``memory.sync.syncer``) between real stores, over a line that stands in for
the libp2p stream: members meet and converge; strangers, removed devices and damaged or replayed
bytes are refused with nothing read or written."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crypto.identity import Identity
from ground.authority import Speaker
from memory.embedders.hashing import HashingEmbedder
from memory.errors import CrystalNotFound
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.sync.replica import Replica
from memory.sync.schema import SYNC_SCHEMA
from memory.sync.settings import SyncSettings
from memory.sync.syncer import Syncer
from memory.sync.wire import Ask, ask_bytes, new_nonce, read_answer_outer
from tests.memory.sync_support import KeptGroup, Line, found, join, remove


@dataclass
class Device:
    store: IntakeStore
    group: KeptGroup
    syncer: Syncer

    async def remember(self, text: str) -> str:
        new = NewCrystal(text=text, origin=Origin.USER_INPUT, speaker=Speaker.PERSON)
        return (await self.store.remember(new)).crystal.id

    async def has(self, crystal_id: str) -> bool:
        try:
            await self.store.get(crystal_id)
        except CrystalNotFound:
            return False
        return True


async def _device(tmp: Path, line: Line, group: KeptGroup, name: str, **settings: object) -> Device:
    store = await IntakeStore.open(tmp / f"{name}.db", HashingEmbedder(), schemas=(SYNC_SCHEMA,))
    replica = Replica(store, group.peer_id)
    await replica.open()
    await replica.start()
    syncer = Syncer(replica, group, line.for_peer(group.peer_id), group.peer_id, SyncSettings(**settings))  # type: ignore[arg-type]
    line.syncers[group.peer_id] = syncer
    return Device(store, group, syncer)


@pytest.fixture
async def trio_of_devices(tmp_path: Path) -> AsyncIterator[tuple[Line, list[Device]]]:
    line = Line()
    a = found(Identity.generate())
    b, c = KeptGroup(Identity.generate()), KeptGroup(Identity.generate())
    join(a, b, "desktop")
    join(a, c, "pi")
    b.members = c.members = a.members
    made = [await _device(tmp_path, line, g, n, ops_per_answer=7) for g, n in ((a, "a"), (b, "b"), (c, "c"))]
    try:
        yield line, made
    finally:
        for d in made:
            await d.store.close()


async def test_a_change_reaches_every_member_in_small_answers(trio_of_devices: tuple[Line, list[Device]]) -> None:
    _, (a, b, c) = trio_of_devices
    ids = [await a.remember(f"Note number {i} about the garden") for i in range(30)]
    await a.syncer.replica.write_down()
    pulled = await b.syncer.pull(a.group.peer_id)
    # 30 crystals and their 30 vectors, 7 operations an answer: cut short, asked again
    assert pulled.taken == 60 and pulled.asks >= 9
    await c.syncer.pull(b.group.peer_id)  # a's words reach c through b
    assert all([await c.has(i) for i in ids])
    report = await c.syncer.report()
    assert report[b.group.peer_id]["in_sync"] is True
    assert report[a.group.peer_id]["last_seen_ms"] is None


async def test_answers_cut_on_the_way_are_asked_smaller_until_they_pass(tmp_path: Path) -> None:
    """A relay cuts a circuit past its data limit (py-libp2p's own: 1 MiB by default, at least
    64 KiB in our settings; go-libp2p's: 128 KiB), and an answer of 2,000 operations is larger: asked
    again as large, it was cut every time, and a device behind a NAT never got anything more."""
    line = Line()
    a = found(Identity.generate())
    b = KeptGroup(Identity.generate())
    join(a, b, "phone")
    b.members = a.members
    made = [await _device(tmp_path, line, g, n) for g, n in ((a, "a"), (b, "b"))]
    try:
        laptop, phone = made
        ids = [await laptop.remember(f"Shelf {i} holds the jars of batch {i * 7}") for i in range(60)]
        await laptop.syncer.replica.write_down()
        line.cut_past_bytes = 16_384
        for _ in range(12):  # rounds, each of which may end with a cut answer
            await phone.syncer.pull_quietly(a.peer_id)
        assert all([await phone.has(i) for i in ids])
        assert (await phone.syncer.report())[a.peer_id]["in_sync"] is True
    finally:
        for d in made:
            await d.store.close()


async def test_an_operation_larger_than_an_answer_still_travels(tmp_path: Path) -> None:
    """An answer is cut to ``answer_bytes`` (floor 70 KB); one operation larger than that alone (a
    crystal of 100,000 characters is up to 400 KB) was cut to an empty answer, every time, and the
    other device never had it, nor anything said after it."""
    line = Line()
    a = found(Identity.generate())
    b = KeptGroup(Identity.generate())
    join(a, b, "phone")
    b.members = a.members
    made = [await _device(tmp_path, line, g, n, answer_bytes=70_000) for g, n in ((a, "a"), (b, "b"))]
    try:
        laptop, phone = made
        long_one = await laptop.remember("Überprüfung der Zählerstände. " * 3_000)  # ~93,000 characters
        after = await laptop.remember("The boiler service is booked for March")
        await laptop.syncer.replica.write_down()
        await phone.syncer.pull(a.peer_id)
        assert await phone.has(long_one) and await phone.has(after)
    finally:
        for d in made:
            await d.store.close()


async def test_a_stranger_is_refused_before_anything_is_read(trio_of_devices: tuple[Line, list[Device]]) -> None:
    _, (a, _, _) = trio_of_devices
    await a.remember("Private plans for the weekend")
    stranger = Identity.generate()
    answer = await a.syncer.answer(stranger.peer_id, b"\x00garbage that is never parsed")
    with pytest.raises(Exception, match="not a member"):
        read_answer_outer(answer)
    assert a.syncer.counters["asks_refused"] == 1


async def test_a_member_cannot_replay_an_ask_as_another_member(trio_of_devices: tuple[Line, list[Device]]) -> None:
    _, (a, b, c) = trio_of_devices
    await a.remember("Only for the group")
    await a.syncer.replica.write_down()
    view = b.group.view()
    assert view is not None
    ask = Ask({}, "", new_nonce(), 100)
    made_for_a = ask_bytes(
        view.current_key, view.group_id, view.members.pack(), {}, b.group.peer_id, a.group.peer_id, ask
    )
    # c sends b's ask to a as its own: the box is bound to b as asker, so a cannot open it as c's
    answer = await a.syncer.answer(c.group.peer_id, made_for_a)
    with pytest.raises(Exception, match="MAC"):
        read_answer_outer(answer)


async def test_a_removed_device_gets_nothing_written_after(trio_of_devices: tuple[Line, list[Device]]) -> None:
    _, (a, b, c) = trio_of_devices
    before = await a.remember("Said while c was a member")
    await a.syncer.replica.write_down()
    await c.syncer.pull(a.group.peer_id)
    await b.syncer.pull(a.group.peer_id)
    assert await c.has(before)
    remove(a.group, c.group)
    after = await a.remember("Said after c was removed")
    await a.syncer.replica.write_down()
    # b has not heard of the removal: c asks b first; b learns nothing new from c's ask, answers
    # with what b has (written before the removal only), and a's later words never reach b without
    # the new member list, which names c no more
    await c.syncer.pull(b.group.peer_id)
    await c.syncer.pull(a.group.peer_id)
    assert not await c.has(after)
    await b.syncer.pull(a.group.peer_id)  # b takes the new list and epoch, then a's words
    assert await b.has(after)
    assert b.group.members is not None and not b.group.members.has(c.group.identity.public_key)
    await c.syncer.pull(b.group.peer_id)
    assert not await c.has(after)
    assert "not a member" in c.syncer.status[b.group.peer_id].last_error


async def test_the_loop_brings_a_change_to_an_online_member(trio_of_devices: tuple[Line, list[Device]]) -> None:
    import asyncio

    _, (a, b, _) = trio_of_devices
    tasks = [asyncio.create_task(d.syncer.run()) for d in (a, b)]
    try:
        await asyncio.sleep(0.5)  # the first round: they have met
        cid = await a.remember("The plumber comes on Thursday")
        for _ in range(100):
            if await b.has(cid):
                break
            await asyncio.sleep(0.05)
        assert await b.has(cid)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_device_that_does_not_embed_searches_as_the_one_that_did(
    trio_of_devices: tuple[Line, list[Device]],
) -> None:
    _, (a, b, _) = trio_of_devices
    for text in ("Ana plays the cello", "The cat sleeps on the radiator", "Tuesday is recycling day",
                 "Ana's cello lesson moved to Friday", "We owe Marco forty euros"):  # fmt: skip
        await a.remember(text)
    await a.syncer.replica.write_down()
    await b.syncer.pull(a.group.peer_id)
    # b never embedded (its backlog never ran): every vector came from a
    assert await b.store.backlog_size() == 0
    found = 0
    for query in ("cello", "who plays music", "money we owe", "bins", "Ana lesson Friday"):
        for mode in (SearchMode.HYBRID, SearchMode.VECTOR):
            here = [h.crystal.id for h in await search(a.store, SearchRequest(query=query, mode=mode))]
            there = [h.crystal.id for h in await search(b.store, SearchRequest(query=query, mode=mode))]
            assert here == there, (query, mode)
            found += len(here)
    assert found >= 5
