"""Two and three devices' real stores (SQLite with FTS5 and sqlite-vec) exchanging operations
through ``memory.sync.replica.Replica``, as the exchange does over the network: every change
the journal finds travels, the merge decides, and the rows follow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ground.authority import Speaker
from ground.clock import Clock, wall_clock_ms
from memory.cognition.adopt import pin
from memory.embedders.hashing import HashingEmbedder
from memory.errors import CrystalNotFound
from memory.governance import quarantine
from memory.governance.erase import erase
from memory.governance.scope import change_scope
from memory.intake.store import IntakeStore
from memory.model import Lifecycle, Lifespan, NewCrystal, Origin, Quarantine, Scope, SemanticType, Sensitivity
from memory.service import history
from memory.service.caller import Caller
from memory.service.requests import RetypeArgs, SupersedeArgs
from memory.storage.row_writes import crystal_any
from memory.sync.apply import apply_batch
from memory.sync.journal import Carried
from memory.sync.merge import fold
from memory.sync.operations import Change
from memory.sync.replica import Replica
from memory.sync.rows import all_ops, missing_from
from memory.sync.schema import SYNC_SCHEMA
from tests.memory.conftest import FakeClock


class Device:
    def __init__(self, store: IntakeStore, replica: Replica) -> None:
        self.store, self.replica = store, replica

    async def remember(self, text: str, speaker: Speaker = Speaker.PERSON, **kw: object) -> str:
        origin = Origin.USER_INPUT if speaker is Speaker.PERSON else Origin.SESSION
        done = await self.store.remember(NewCrystal(text=text, origin=origin, speaker=speaker, **kw))  # type: ignore[arg-type]
        return done.crystal.id


async def _device(tmp: Path, name: str, carried: Carried | None = None, now_ms: Clock | None = None) -> Device:
    clock = now_ms or wall_clock_ms
    store = await IntakeStore.open(tmp / f"{name}.db", HashingEmbedder(), now_ms=clock, schemas=(SYNC_SCHEMA,))
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


# --- found by tests/memory/test_sync_model.py ---------------------------------------------------

HELD = Quarantine("its author is not trusted here yet")


async def _peer_words(device: Device, text: str) -> str:
    new = NewCrystal(text, origin=Origin.PEER, speaker=Speaker.PEER, scope=Scope.SHARED, actor="peer:ab12",
                     source="peer:ab12", quarantine=HELD)  # fmt: skip
    return (await device.store.remember(new)).crystal.id


async def test_a_held_crystal_decided_before_it_was_said_keeps_its_review_everywhere(
    devices: list[Device],
) -> None:
    a, b, _ = devices
    rejected = await _peer_words(a, "Peer tip: water the ferns at noon")
    released = await _peer_words(a, "Peer tip: rotate the garden beds each spring")
    await quarantine.reject(a.store, rejected, actor="cli")
    await quarantine.approve(a.store, released, actor="cli")
    await meet(a, b)  # a's journal first sees both decided: each travels held, then decided
    for cid, status in ((rejected, "rejected"), (released, "approved")):
        async with b.store.reader().execute("SELECT status FROM quarantine WHERE crystal_id = ?", (cid,)) as c:
            assert await c.fetchone() == (status,)
    assert (await crystal_any(b.store.reader(), rejected)).lifecycle is Lifecycle.EXPIRED
    assert not (await b.store.get(released)).quarantined


async def test_a_change_made_in_the_millisecond_a_crystal_arrived_is_said_by_who_made_it(tmp_path: Path) -> None:
    clock = FakeClock()  # nothing moves it: the peer's words and the person's retype share one millisecond
    a = await _device(tmp_path, "a", now_ms=clock)
    b = await _device(tmp_path, "b", now_ms=clock)
    try:
        cid = await _peer_words(a, "Peer tip: prune the roses in March")
        await meet(a, b)
        await history.retype(a.store, RetypeArgs(id=cid, type=SemanticType.PREFERENCE), Caller("cli", Speaker.PERSON))
        await meet(a, b)
        said = [op for op in await all_ops(b.store.reader()) if op.change is Change.RETYPE]
        assert [op.speaker for op in said] == [Speaker.PERSON]
        assert (await crystal_any(b.store.reader(), cid)).semantic_type is SemanticType.PREFERENCE
    finally:
        await a.store.close()
        await b.store.close()


async def test_the_agents_supersession_by_hand_of_a_peers_words_travels(devices: list[Device]) -> None:
    a, b, _ = devices
    old = await _peer_words(a, "Peer tip: the market opens at 8")
    new = await _peer_words(a, "Peer tip: the market opens at 9 now")
    await history.supersede(a.store, SupersedeArgs(id=old, by=new), Caller("agent", Speaker.AGENT))
    await meet(a, b)
    assert fold(await all_ops(b.store.reader())).crystals[old].superseded_by == new
    superseded = (await crystal_any(b.store.reader(), old)).superseded
    assert superseded is not None and superseded.by == new


async def test_a_crystal_follows_the_one_replacing_it_when_that_one_arrives_late_or_is_erased(
    devices: list[Device],
) -> None:
    a, b, c = devices
    x = await a.remember("The boiler is serviced in May")
    y = await a.remember("The boiler is serviced in October now")
    await history.supersede(a.store, SupersedeArgs(id=x, by=y), Caller("cli", Speaker.PERSON))
    # x's supersession is said before y's STORE: a batch of one takes it before y has arrived
    await a.replica.write_down()
    while ops := await a.replica.missing_for((await b.replica.held()).vector, 1):
        await b.replica.take(ops)
    superseded = (await crystal_any(b.store.reader(), x)).superseded
    assert superseded is not None and superseded.by == y
    await meet(a, c)
    await erase(a.store, y, actor="cli", reason="test")
    await meet(a, c)  # c takes the erasure, then b's copy of the supersession
    await meet(b, c)
    await meet(a, b)
    for d in devices:
        assert (await crystal_any(d.store.reader(), x)).superseded is None, d.replica.device
    assert fold(await all_ops(a.store.reader())).crystals[x].superseded_by is None


async def test_a_change_not_yet_said_survives_another_devices_change_to_the_same_crystal(
    devices: list[Device],
) -> None:
    a, b, _ = devices
    x = await a.remember("The spare tyre is in the shed", speaker=Speaker.AGENT)
    y = await a.remember("The ladder is in the shed")
    await meet(a, b)
    agent, person = Caller("agent", Speaker.AGENT), Caller("cli", Speaker.PERSON)
    await change_scope(b.store, y, Scope.SHARED, speaker=Speaker.PERSON, actor="cli", reason="test")
    await b.replica.write_down()
    await history.retype(b.store, RetypeArgs(id=x, type=SemanticType.EPISODE), agent)
    await b.replica.write_down()  # b's scope change is its first operation, the retype its second
    # on a, before b's changes come and before a's journal has said them: the person retypes x, pins y
    await history.retype(a.store, RetypeArgs(id=x, type=SemanticType.PREFERENCE), person)
    await pin(a.store, y, actor="cli", speaker=Speaker.PERSON)
    taken = await missing_from(b.store.reader(), (await a.replica.held()).vector, 100)
    async with a.store.transaction() as db:  # the batch alone leaves the pin (another field) to be said
        await apply_batch(db, [op for op in taken if op.target == y], a.store.now_ms())
    await a.replica.take([op for op in taken if op.target == x])  # says the retype before the agent's lands
    await meet(a, b)
    for d in (a, b):
        assert (await d.store.get(x)).semantic_type is SemanticType.PREFERENCE
        there = await d.store.get(y)
        assert there.lifespan is Lifespan.PERMANENT and there.scope is Scope.SHARED


async def test_an_erasure_cut_off_by_a_kill_is_finished_when_the_replica_opens(
    devices: list[Device], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch that brings another device's erasure is kept in one transaction and carried out
    just after; a kill between the two left the words here for good, since the erasure was held
    already and never applied again."""
    from ground.failpoints import ENV, FailpointHit

    a, b, _ = devices
    cid = await a.remember("The spare key hides in the blue watering can by the shed")
    await meet(a, b)
    await erase(a.store, cid, actor="cli", reason="test")
    await a.replica.write_down()
    monkeypatch.setenv(ENV, "sync:before-erasing=1")  # as a kill at that moment would leave it
    with pytest.raises(FailpointHit):
        await b.replica.take(await a.replica.missing_for((await b.replica.held()).vector, 100))
    assert (await crystal_any(b.store.reader(), cid)).text  # still here
    again = Replica(b.store, "device-b")
    await again.open()
    with pytest.raises(CrystalNotFound):
        await crystal_any(b.store.reader(), cid)
    await b.store.checkpoint(truncate=True)
    files = sorted(tmp_path.glob("b.db*"))  # noqa: ASYNC240 - the test's own files
    assert files and not any(b"blue watering can" in p.read_bytes() for p in files)
