"""Issue 51's model test on the real parts: three devices, each a real store (SQLite with FTS5 and
sqlite-vec) with the sync set and a ``memory.sync.replica.Replica``, changed through the functions
the commands call (``memory.service``, ``memory.cognition.adopt``, ``memory.governance``) by the
person and the agent, partitioned, restarted, and meeting in batches cut short.

Hypothesis drives random edits, forgets, restores, supersessions, scope changes, retypes, held
crystals released or rejected, and erasures. At the end, after every pair has met until nothing is
left to send:

- every device holds the same operations (equal digests);
- every crystal the merge keeps is on every device's rows as the merge says it is (words, speaker,
  type, scope, pinned, forgotten, superseded, review);
- an erased crystal has no row and no operation with its words on any device;
- nothing a device held is lost unless it was erased.

One difference is allowed, and checked for what it is: a crystal whose words a device already held
under an id of its own (two devices stored the same text apart) has no row of its own there
(``memory.sync.apply``: the store keeps one crystal per text).
"""

from __future__ import annotations

import asyncio
import itertools
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from ground.authority import Capability, Speaker, require
from ground.errors import BitterbotError
from memory.cognition.adopt import pin
from memory.embedders.hashing import HashingEmbedder
from memory.errors import CrystalNotFound
from memory.governance import quarantine
from memory.governance.scope import change_scope
from memory.intake.store import IntakeStore
from memory.model import Lifecycle, Lifespan, NewCrystal, Origin, Quarantine, Scope, SemanticType, content_hash
from memory.service import held, history, write
from memory.service.caller import Caller
from memory.service.requests import EditArgs, ForgetArgs, RememberArgs, RetypeArgs, ShowArgs, SupersedeArgs
from memory.storage.row_writes import crystal_any
from memory.sync.merge import CrystalState, MemoryState, fold
from memory.sync.operations import Change, Operation
from memory.sync.replica import Replica
from memory.sync.rows import all_ops
from memory.sync.schema import SYNC_SCHEMA
from tests.memory.conftest import FakeClock

NAMES = ("a", "b", "c")
PAIRS = tuple(itertools.combinations(NAMES, 2))
CALLERS = {Speaker.PERSON: Caller("cli", Speaker.PERSON), Speaker.AGENT: Caller("agent", Speaker.AGENT)}
#: Words said on more than one device (the same text stored apart) and said again after a forget.
WORDS = [f"Ana keeps the {thing} in the {place}" for thing in ("blue kite", "old map", "spare bike")
         for place in ("attic", "garage")]  # fmt: skip
TYPES = (SemanticType.FACT, SemanticType.PREFERENCE, SemanticType.EPISODE)
T = TypeVar("T")


class Device:
    def __init__(self, folder: Path, name: str, clock: FakeClock) -> None:
        self.path = folder / f"{name}.db"
        self.name = f"device-{name}"
        self.clock = clock
        self.store: IntakeStore
        self.replica: Replica

    async def open(self) -> None:
        self.store = await IntakeStore.open(self.path, HashingEmbedder(), now_ms=self.clock, schemas=(SYNC_SCHEMA,))
        self.replica = Replica(self.store, self.name)
        await self.replica.open()
        await self.replica.start()

    async def ids(self) -> list[str]:
        async with self.store.reader().execute("SELECT id FROM crystals ORDER BY id") as cursor:
            return [str(r[0]) for r in await cursor.fetchall()]


async def meet(x: Device, y: Device, *, batch: int, batches: int | None, said_first: bool = True) -> None:
    """A pull each way, as the exchange does: each writes its changes down (``said_first``; else the
    replica finds them itself), then takes what it lacks in batches of ``batch``; ``batches``: the
    meeting ends after that many each way (None: when nothing is left)."""
    for src, dst in ((x, y), (y, x)):
        if said_first:
            await src.replica.write_down()
            await dst.replica.write_down()
        for _ in itertools.count() if batches is None else range(batches):
            ops = await src.replica.missing_for((await dst.replica.held()).vector, batch)
            if not ops:
                break
            await dst.replica.take(ops)


class Devices(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.folder = tempfile.TemporaryDirectory()
        self.clock = FakeClock()
        self.devices = {n: Device(Path(self.folder.name), n, self.clock) for n in NAMES}
        for device in self.devices.values():
            self.run(device.open())
        self.apart: set[tuple[str, str]] = set()  # pairs that cannot meet now
        self.made: dict[str, tuple[str, str]] = {}  # every crystal a device stored: id -> (device, words)
        self.erased_here: set[str] = set()  # erased on some device (perhaps before it was ever said)
        self.fresh = itertools.count()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    async def _target(self, name: str, pick: int) -> str | None:
        ids = await self.devices[name].ids()
        return ids[pick % len(ids)] if ids else None

    def _try(self, coroutine: Coroutine[Any, Any, T]) -> T | None:
        """A service's refusal (its typed error) is an answer, not a failure."""
        try:
            return self.run(coroutine)
        except BitterbotError:
            return None

    # --- what the person and the agent do on one device ---------------------------------------

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), again=st.integers(0, 40),
          kind=st.sampled_from(TYPES), pinned=st.booleans())  # fmt: skip
    def remember(self, name: str, speaker: Speaker, again: int, kind: SemanticType, pinned: bool) -> None:
        """New words, or words said before (on this device or another: a duplicate, or a forgotten
        crystal brought back)."""
        text = WORDS[again] if again < len(WORDS) else f"Note {next(self.fresh)}: call the plumber about the sink"
        args = RememberArgs(text=text, type=kind, pin=pinned and speaker is Speaker.PERSON)
        done = self._try(write.remember(self.devices[name].store, args, CALLERS[speaker], answered_bounty=None))
        if done is not None and done["created"]:
            self.made.setdefault(done["crystal"]["id"], (name, text))

    @rule(name=st.sampled_from(NAMES))
    def a_peer_sends_words(self, name: str) -> None:
        """A peer's words, held for the person's review."""
        text = f"Peer tip {next(self.fresh)}: rotate the garden beds each spring"
        new = NewCrystal(text, origin=Origin.PEER, speaker=Speaker.PEER, scope=Scope.SHARED, actor="peer:ab12",
                         source="peer:ab12", quarantine=Quarantine("its author is not trusted here yet"))  # fmt: skip
        done = self.run(self.devices[name].store.remember(new))
        self.made.setdefault(done.crystal.id, (name, text))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99),
          release=st.booleans())  # fmt: skip
    def decide_held(self, name: str, speaker: Speaker, pick: int, release: bool) -> None:
        store = self.devices[name].store
        held_ids = [h.crystal.id for h in self.run(quarantine.held(store))]
        if not held_ids:
            return
        caller = CALLERS[speaker]
        target = ShowArgs(id=held_ids[pick % len(held_ids)])
        try:  # the command table asks for the capability before the service runs
            require(caller.speaker, Capability.DECIDE_QUARANTINE, "memory.quarantine")
        except BitterbotError:
            return
        self._try(held.approve(store, target, caller) if release else held.reject(store, target, caller))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99))
    def pin(self, name: str, speaker: Speaker, pick: int) -> None:
        store = self.devices[name].store
        if (target := self.run(self._target(name, pick))) is not None:
            self._try(pin(store, target, actor=CALLERS[speaker].actor, speaker=speaker))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99))
    def forget(self, name: str, speaker: Speaker, pick: int) -> None:
        store = self.devices[name].store
        if (target := self.run(self._target(name, pick))) is not None:
            self._try(write.forget(store, ForgetArgs(id=target, reason="not needed"), CALLERS[speaker]))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99))
    def erase(self, name: str, speaker: Speaker, pick: int) -> None:
        store = self.devices[name].store
        if (target := self.run(self._target(name, pick))) is not None:
            done = self._try(write.forget(store, ForgetArgs(id=target, reason="gone", erase=True), CALLERS[speaker]))
            if done is not None:
                self.erased_here.add(target)

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99),
          scope=st.sampled_from([Scope.SHARED, Scope.PRIVATE]))  # fmt: skip
    def change_scope(self, name: str, speaker: Speaker, pick: int, scope: Scope) -> None:
        store = self.devices[name].store
        if (target := self.run(self._target(name, pick))) is not None:
            self._try(change_scope(store, target, scope, speaker=speaker, actor=CALLERS[speaker].actor, reason="test"))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99),
          kind=st.sampled_from(TYPES))  # fmt: skip
    def retype(self, name: str, speaker: Speaker, pick: int, kind: SemanticType) -> None:
        store = self.devices[name].store
        if (target := self.run(self._target(name, pick))) is not None:
            self._try(history.retype(store, RetypeArgs(id=target, type=kind), CALLERS[speaker]))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99),
          by=st.integers(0, 99))  # fmt: skip
    def supersede(self, name: str, speaker: Speaker, pick: int, by: int) -> None:
        store = self.devices[name].store
        old, new = self.run(self._target(name, pick)), self.run(self._target(name, by))
        if old is not None and new is not None:
            self._try(history.supersede(store, SupersedeArgs(id=old, by=new), CALLERS[speaker]))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99))
    def unsupersede(self, name: str, speaker: Speaker, pick: int) -> None:
        store = self.devices[name].store
        if (target := self.run(self._target(name, pick))) is not None:
            self._try(history.unsupersede(store, ShowArgs(id=target), CALLERS[speaker]))

    @rule(name=st.sampled_from(NAMES), speaker=st.sampled_from(list(CALLERS)), pick=st.integers(0, 99))
    def edit(self, name: str, speaker: Speaker, pick: int) -> None:
        """New words for a crystal: a new crystal that supersedes it (``memory.supersession.edits``)."""
        store = self.devices[name].store
        if (target := self.run(self._target(name, pick))) is not None:
            text = f"Note {next(self.fresh)}: the plumber comes on Thursday instead"
            done = self._try(history.edit(store, EditArgs(id=target, text=text), CALLERS[speaker]))
            if done is not None:
                self.made.setdefault(done["id"], (name, text))

    # --- the network and the machines ------------------------------------------------------------

    @rule(pair=st.sampled_from(PAIRS), batch=st.integers(1, 6), batches=st.none() | st.integers(1, 3),
          said_first=st.booleans())  # fmt: skip
    def meet(self, pair: tuple[str, str], batch: int, batches: int | None, said_first: bool) -> None:
        if pair not in self.apart:
            x, y = self.devices[pair[0]], self.devices[pair[1]]
            self.run(meet(x, y, batch=batch, batches=batches, said_first=said_first))

    @rule(pair=st.sampled_from(PAIRS))
    def partition(self, pair: tuple[str, str]) -> None:
        self.apart.add(pair)

    @rule()
    def heal(self) -> None:
        self.apart.clear()

    @rule(name=st.sampled_from(NAMES))
    def restart(self, name: str) -> None:
        """The daemon stops and starts again: the same file, a fresh replica (its clock and numbers
        continue from what the file holds)."""
        device = self.devices[name]
        self.run(device.store.close())
        self.run(device.open())

    @rule(ms=st.integers(0, 120_000))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)

    # --- at the end ----------------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            self.apart.clear()
            self.run(self._until_quiet())
            self.run(self._check())
        finally:
            for device in self.devices.values():
                self.run(device.store.close())
            self.loop.close()
            self.folder.cleanup()

    async def _until_quiet(self) -> None:
        for _ in range(4):
            for x, y in PAIRS:
                await meet(self.devices[x], self.devices[y], batch=50, batches=None)
            held = [await d.replica.held() for d in self.devices.values()]
            pending = [await d.replica.pending() for d in self.devices.values()]
            if len({h.digest for h in held}) == 1 and not any(pending):
                return
        raise AssertionError(f"the devices did not settle: {held} pending {pending}")

    async def _check(self) -> None:
        devices = list(self.devices.values())
        ops = {d.name: await all_ops(d.store.reader()) for d in devices}
        keys = {name: sorted(op.key for op in held) for name, held in ops.items()}
        assert len({tuple(k) for k in keys.values()}) == 1, "every device holds the same operations"
        state = fold(ops[devices[0].name])
        for device in devices:
            assert fold(ops[device.name]) == state
            await _rows_are_the_state(device, ops[device.name], state)
            for op in ops[device.name]:
                if op.target in state.erased:
                    assert not op.text and not op.details, (device.name, op)
        for crystal_id, (name, words) in self.made.items():
            # nothing lost: every crystal a device stored is in the merged state, or was erased (an
            # erasure before the journal said the crystal says nothing: no other device had it)
            assert crystal_id in state.crystals or crystal_id in state.erased | self.erased_here, (name, words)


async def _rows_are_the_state(device: Device, ops: list[Operation], state: MemoryState) -> None:
    db = device.store.reader()
    for crystal_id in state.erased:
        try:
            await crystal_any(db, crystal_id)
        except CrystalNotFound:
            continue
        raise AssertionError(f"{device.name} keeps erased {crystal_id}")
    for crystal in state.crystals.values():
        try:
            row = await crystal_any(db, crystal.id)
        except CrystalNotFound:
            async with db.execute("SELECT id FROM crystals WHERE content_hash = ?", (content_hash(crystal.text),)) as c:
                twin = await c.fetchone()
            assert twin is not None, f"{device.name} lost {crystal.id} ({crystal.text!r})"
            continue
        await _row_is(device, ops, row, crystal)


#: The operations that set each field of a crystal, and what one sets it to.
FIELDS: dict[str, tuple[tuple[Change, ...], Callable[[Operation], object]]] = {
    "text": ((Change.EDIT,), lambda op: op.text),
    "speaker": ((Change.EDIT,), lambda op: op.speaker),
    "type": ((Change.RETYPE,), lambda op: op.semantic_type),
    "scope": ((Change.SCOPE,), lambda op: op.scope),
    "pinned": ((Change.PIN, Change.UNPIN), lambda op: op.change is Change.PIN),
    "forgotten": ((Change.FORGET, Change.RESTORE), lambda op: op.change is Change.FORGET),
    "superseded_by": ((Change.SUPERSEDE, Change.UNSUPERSEDE), lambda op: op.other or None),
    "review": ((Change.RELEASE, Change.REJECT), lambda op: "released" if op.change is Change.RELEASE else "rejected"),
}


def _fields(crystal: CrystalState) -> dict[str, object]:
    return {
        "text": crystal.text,
        "speaker": crystal.speaker,
        "type": crystal.semantic_type,
        "scope": crystal.scope,
        "pinned": crystal.pinned,
        "forgotten": crystal.forgotten,
        "superseded_by": crystal.superseded_by,
        "review": crystal.review,
    }


def _its_own_word(device: Device, ops: list[Operation], crystal: CrystalState, name: str, seen: object) -> bool:
    """Whether a field a device's row holds apart from the merge is its own change the merge did not
    take (``memory.sync.apply``: a device's change stays on its row until another device says
    something of that field): the device's latest operation on the field set it so, and the state
    is the same without that operation (the agent's retype after the person's, a restore by the agent)."""
    changes, value = FIELDS[name]
    own = [op for op in ops if op.device == device.name and op.target == crystal.id and op.change in changes]
    if not own:
        return False
    latest = max(own, key=lambda op: op.seq)
    without = fold(op for op in ops if op != latest).crystals.get(crystal.id)
    return value(latest) == seen and without is not None and _fields(without)[name] == _fields(crystal)[name]


async def _row_is(device: Device, ops: list[Operation], row: Any, crystal: CrystalState) -> None:
    async with device.store.reader().execute(
        "SELECT status FROM quarantine WHERE crystal_id = ?", (crystal.id,)
    ) as cursor:
        review = await cursor.fetchone()
    status = {"held": "held", "approved": "released", "rejected": "rejected"}.get(review[0] if review else "", "")
    seen: dict[str, object] = {
        "text": row.text,
        "speaker": row.speaker,
        "type": row.semantic_type.value,
        "scope": row.scope.value,
        "pinned": row.lifespan is Lifespan.PERMANENT,
        "forgotten": row.lifecycle is Lifecycle.EXPIRED and status != "rejected",
        "superseded_by": row.superseded.by if row.superseded else None,
        "review": status,
    }
    wanted = _fields(crystal)
    differ = {
        name: (seen[name], wanted[name])
        for name in seen
        if seen[name] != wanted[name] and not _its_own_word(device, ops, crystal, name, seen[name])
    }
    if differ:
        said = [op for op in ops if op.target == crystal.id]
        async with device.store.reader().execute(
            "SELECT from_state, to_state, reason, actor, ts_ms FROM audit_log WHERE crystal_id = ?", (crystal.id,)
        ) as cursor:
            audit = await cursor.fetchall()
        raise AssertionError(f"{device.name} {crystal.id} {crystal.text!r}: {differ}\n ops {said}\n audit {audit}")


Devices.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_three_devices_converge_on_what_the_merge_rules_give = Devices.TestCase
