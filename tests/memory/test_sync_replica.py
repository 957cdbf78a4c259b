"""Two and three devices' real stores (SQLite with FTS5 and sqlite-vec) exchanging operations
through ``memory.sync.replica.Replica``, as the exchange does over the network: every change
the journal finds travels, the merge decides, and the rows follow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ground.authority import Speaker
from memory.cognition.adopt import pin
from memory.embedders.hashing import HashingEmbedder
from memory.errors import CrystalNotFound
from memory.governance.erase import erase
from memory.governance.scope import change_scope
from memory.intake.store import IntakeStore
from memory.model import Lifecycle, NewCrystal, Origin, Scope, Sensitivity
from memory.storage.row_writes import crystal_any
from memory.sync.journal import Carried
from memory.sync.merge import fold
from memory.sync.replica import Replica
from memory.sync.rows import all_ops
from memory.sync.schema import SYNC_SCHEMA


class Device:
    def __init__(self, store: IntakeStore, replica: Replica) -> None:
        self.store, self.replica = store, replica

    async def remember(self, text: str, speaker: Speaker = Speaker.PERSON, **kw: object) -> str:
        origin = Origin.USER_INPUT if speaker is Speaker.PERSON else Origin.SESSION
        done = await self.store.remember(NewCrystal(text=text, origin=origin, speaker=speaker, **kw))  # type: ignore[arg-type]
        return done.crystal.id


async def _device(tmp: Path, name: str, carried: Carried | None = None) -> Device:
    store = await IntakeStore.open(tmp / f"{name}.db", HashingEmbedder(), schemas=(SYNC_SCHEMA,))
    replica = Replica(store, f"device-{name}", carried)
    await replica.open()
    await replica.start()
    return Device(store, replica)


@pytest.fixture
async def devices(tmp_path: Path) -> AsyncIterator[list[Device]]:
    made = [await _device(tmp_path, n) for n in "abc"]
    try:
        yield made
    finally:
        for d in made:
            await d.store.close()


async def meet(a: Device, b: Device) -> None:
    """What a pull in each direction does: each writes down its changes and takes what it lacks."""
    for x, y in ((a, b), (b, a)):
        await x.replica.write_down()
        await y.replica.write_down()
        while ops := await x.replica.missing_for((await y.replica.held()).vector, 100):
            await y.replica.take(ops)


async def test_a_crystal_and_its_changes_reach_the_other_device(devices: list[Device]) -> None:
    a, b, _ = devices
    cid = await a.remember("My sister Ana's birthday is on March 3rd")
    await meet(a, b)
    there = await b.store.get(cid)
    assert there.text == "My sister Ana's birthday is on March 3rd"
    assert there.speaker is Speaker.PERSON
    await pin(a.store, cid, actor="cli", speaker=Speaker.PERSON)
    await change_scope(a.store, cid, Scope.SHARED, speaker=Speaker.PERSON, actor="cli", reason="test")
    await meet(a, b)
    there = await b.store.get(cid)
    assert there.lifespan.value == "permanent" and there.scope is Scope.SHARED
    await a.store.forget(cid, actor="cli")
    await meet(a, b)
    assert (await crystal_any(b.store.reader(), cid)).lifecycle is Lifecycle.EXPIRED
    assert (await a.replica.held()).digest == (await b.replica.held()).digest


async def test_changes_made_apart_converge_through_a_third(devices: list[Device]) -> None:
    a, b, c = devices
    x = await a.remember("We keep the spare key under the blue pot")
    await meet(a, b)
    await meet(b, c)
    # apart: b forgets, a stores more, c stores its own
    await b.store.forget(x, actor="cli")
    y = await a.remember("The wifi password changed in June", speaker=Speaker.AGENT)
    z = await c.remember("Dentist on Tuesday at 9")
    await meet(a, c)
    await meet(c, b)
    await meet(a, b)
    held = {(await d.replica.held()).digest for d in devices}
    assert len(held) == 1
    for d in devices:
        assert (await crystal_any(d.store.reader(), x)).lifecycle is Lifecycle.EXPIRED
        assert (await d.store.get(y)).speaker is Speaker.AGENT
        assert (await d.store.get(z)).text == "Dentist on Tuesday at 9"


async def test_an_erasure_leaves_no_word_in_any_device_file(devices: list[Device], tmp_path: Path) -> None:
    a, b, c = devices
    secret_words = "We met Kiyoshi by platform 77-31-05 in Osaka"
    cid = await a.remember(secret_words)
    await meet(a, b)
    await meet(b, c)
    await erase(b.store, cid, actor="cli", reason="test")
    await meet(b, c)
    await meet(c, a)
    for d in devices:
        with pytest.raises(CrystalNotFound):
            await d.store.get(cid)
        ops = [op for op in await all_ops(d.store.reader()) if op.target == cid]
        assert ops and all(not op.text and not op.details for op in ops)
        await d.store.checkpoint(truncate=True)
    files = sorted(tmp_path.glob("*.db*"))  # noqa: ASYNC240 - the test's own files, after the stores are still
    assert len(files) >= 3
    for path in files:
        assert b"77-31-05" not in path.read_bytes(), path


async def test_the_agent_cannot_forget_the_persons_words_on_another_device(devices: list[Device]) -> None:
    a, b, _ = devices
    cid = await a.remember("I am allergic to penicillin")
    await meet(a, b)
    # b's store is written around the services (as a buggy or hostile writer would): the journal
    # says it was the agent, and the merge does not count it
    await b.store.forget(cid, actor="agent")
    await meet(a, b)
    assert (await crystal_any(a.store.reader(), cid)).lifecycle is not Lifecycle.EXPIRED
    state = fold(await all_ops(a.store.reader()))
    assert not state.crystals[cid].forgotten


async def test_secrets_stay_unless_the_person_allows_them(tmp_path: Path) -> None:
    a = await _device(tmp_path, "a")
    b = await _device(tmp_path, "b")
    try:
        secret = await a.remember("the staging db password is hunter2", sensitivity=Sensitivity.CONFIDENTIAL)
        plain = await a.remember("Lunch with Sam on Friday")
        await meet(a, b)
        assert (await b.store.get(plain)).text
        with pytest.raises(CrystalNotFound):
            await b.store.get(secret)
    finally:
        await a.store.close()
        await b.store.close()


async def test_what_a_device_held_before_it_joined_travels(tmp_path: Path) -> None:
    a = await _device(tmp_path, "a")
    store = await IntakeStore.open(tmp_path / "b.db", HashingEmbedder(), schemas=(SYNC_SCHEMA,))
    before = (
        await store.remember(
            NewCrystal(text="Old note from before pairing", origin=Origin.USER_INPUT, speaker=Speaker.PERSON)
        )
    ).crystal.id
    b = Device(store, Replica(store, "device-b"))
    await b.replica.open()
    try:
        assert await b.replica.start() == 1
        await meet(a, b)
        assert (await a.store.get(before)).text == "Old note from before pairing"
    finally:
        await a.store.close()
        await store.close()
