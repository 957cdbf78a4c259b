"""The merge rules of a person's devices (memory.sync; docs/design/devices.md), tried on histories
that three devices make apart and exchange in any order, with partitions and restarts.

The model test drives three devices: each makes changes from what it holds (as the person, the
agent, the node, or words from a peer), some pairs sync while others stay apart, and a device may
restart from its operations. After everyone meets, every device must hold the same state, that
state must be the fold of everything said, and each rule must hold of it, checked here apart from
the fold's own code.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from ground.authority import Speaker, may_hide
from memory.errors import SyncRefused
from memory.sync.clock import HybridClock, Stamp
from memory.sync.merge import MemoryState, fold
from memory.sync.operations import Change, Operation
from tests.memory.sync_log_model import OperationLog

DEVICES = ("laptop", "desktop", "pi")
SPEAKERS = (Speaker.PERSON, Speaker.AGENT, Speaker.NODE, Speaker.PEER)
CHANGES = tuple(Change)


class Device:
    def __init__(self, name: str, clock_ms: list[int]) -> None:
        self.name = name
        self.clock = HybridClock(name, lambda: clock_ms[0])
        self.log = OperationLog()

    def make(self, speaker: Speaker, change: Change, target: str, **fields: Any) -> Operation:
        op = Operation(self.name, self.log.next_seq(self.name), self.clock.tick(), speaker, change, target, **fields)
        self.log.add([op])
        return op

    def state(self) -> MemoryState:
        return fold(self.log.operations())


def meet(a: Device, b: Device) -> None:
    """Both ways, as the sync protocol does: each sends what the other's vector lacks."""
    to_b, to_a = a.log.missing_from(b.log.vector), b.log.missing_from(a.log.vector)
    for op in to_b:
        b.clock.seen(op.stamp)
    for op in to_a:
        a.clock.seen(op.stamp)
    b.log.add(to_b)
    a.log.add(to_a)


class Devices(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = [1_000_000]
        self.devices = {name: Device(name, self.now) for name in DEVICES}
        self.said: list[Operation] = []  # everything any device made, words and all
        self.ids = 0

    def _make(self, device: str, speaker: Speaker, change: Change, target: str, **fields: Any) -> None:
        self.said.append(self.devices[device].make(speaker, change, target, **fields))

    @rule(device=st.sampled_from(DEVICES), speaker=st.sampled_from(SPEAKERS), held=st.booleans())
    def store(self, device: str, speaker: Speaker, held: bool) -> None:
        self.ids += 1
        crystal = f"c{self.ids}"
        self._make(device, speaker, Change.STORE, crystal, text=f"words {self.ids} by {speaker}",
                   semantic_type="fact", scope="private", held=held)  # fmt: skip

    @rule(device=st.sampled_from(DEVICES), speaker=st.sampled_from(SPEAKERS), change=st.sampled_from(CHANGES),
          pick=st.integers(0, 10_000), other=st.integers(0, 10_000))  # fmt: skip
    def change(self, device: str, speaker: Speaker, change: Change, pick: int, other: int) -> None:
        """Any change by any speaker to something this device knows: the merge must refuse what the
        authority table does not give, wherever it was made."""
        known = sorted(self.devices[device].state().crystals)
        if change is Change.STORE or (not known and change not in (Change.NOTE, Change.DROP_NOTE)):
            return
        target = known[pick % len(known)] if known and change not in (Change.NOTE, Change.DROP_NOTE) else f"n{pick % 3}"
        fields: dict[str, Any] = {}
        if change in (Change.EDIT, Change.NOTE):
            fields["text"] = f"{change} {len(self.said)} by {speaker}"
        elif change is Change.RETYPE:
            fields["semantic_type"] = random.Random(pick).choice(["fact", "preference", "directive"])
        elif change is Change.SCOPE:
            fields["scope"] = "shared"
        elif change is Change.SUPERSEDE:
            fields["other"] = known[other % len(known)]
        self._make(device, speaker, change, target, **fields)

    @rule(a=st.sampled_from(DEVICES), b=st.sampled_from(DEVICES))
    def sync(self, a: str, b: str) -> None:
        if a != b:
            meet(self.devices[a], self.devices[b])

    @rule(ms=st.integers(0, 5_000))
    def time_passes(self, ms: int) -> None:
        self.now[0] += ms

    @rule(device=st.sampled_from(DEVICES))
    def restart(self, device: str) -> None:
        """A device comes back from what it kept: its operations (its clock starts behind them)."""
        old = self.devices[device]
        fresh = Device(device, self.now)
        fresh.log.add(old.log.operations())
        for op in old.log.operations():
            fresh.clock.seen(op.stamp)
        self.devices[device] = fresh

    @invariant()
    def each_device_holds_the_fold_of_its_own_log(self) -> None:
        for device in self.devices.values():
            state = device.state()
            assert state == fold(reversed(device.log.operations()))
            assert not set(state.crystals) & state.erased

    def teardown(self) -> None:
        laptop, desktop, pi = self.devices.values()
        for a, b in ((laptop, desktop), (desktop, pi), (pi, laptop), (laptop, desktop)):
            meet(a, b)
        states = [device.state() for device in self.devices.values()]
        assert len({state.digest() for state in states}) == 1
        assert states[0] == fold(self.said)
        _rules_hold(states[0], self.said, [d.log for d in self.devices.values()])


def _rules_hold(state: MemoryState, said: list[Operation], logs: list[OperationLog]) -> None:
    """Each rule, checked from what was said, not from the fold's code."""
    stores = {op.target: op for op in sorted(said, key=lambda op: op.stamp, reverse=True) if op.change is Change.STORE}
    person_erased = {op.target for op in said if op.change is Change.ERASE and op.speaker is Speaker.PERSON}
    # 1. an erasure by the person: the crystal is gone, and no device keeps a word of it
    assert state.erased == person_erased & (state.erased | set(stores))
    for log in logs:
        for op in log.operations():
            if op.target in person_erased:
                assert op.text == ""
    for crystal in state.crystals.values():
        store = stores[crystal.id]
        edits = [op for op in said if op.change is Change.EDIT and op.target == crystal.id]
        by_the_person = {op.change for op in said if op.target == crystal.id and op.speaker is Speaker.PERSON}
        # 2. the authority table: no one but the person touches the person's words, and one speaker
        #    hides another's only where the table lets it
        if store.speaker is Speaker.PERSON:
            assert crystal.speaker is Speaker.PERSON
            assert crystal.text in {store.text} | {e.text for e in edits if e.speaker is Speaker.PERSON}
            retypes = {op.semantic_type for op in said if op.target == crystal.id and op.change is Change.RETYPE
                       and op.speaker is Speaker.PERSON}  # fmt: skip
            assert crystal.semantic_type in {store.semantic_type} | retypes
            assert not crystal.forgotten or Change.FORGET in by_the_person
        if crystal.superseded_by is not None:
            replacing = stores[crystal.superseded_by]
            hiders = {op.speaker for op in said if op.target == crystal.id and op.change is Change.SUPERSEDE
                      and op.other == crystal.superseded_by}  # fmt: skip
            assert any(may_hide(s, store.speaker) for s in hiders | {replacing.speaker})
        # 3. the person's edit beats everyone's; else the latest that counts
        by_person = [e for e in edits if e.speaker is Speaker.PERSON]
        if by_person:
            assert crystal.text == max(by_person, key=lambda e: e.stamp).text
        # 4. no word lost: the first words and every edit the person made are still there
        words = {crystal.text, *crystal.history}
        assert store.text in words
        assert {e.text for e in by_person} <= words
        # 5. only the person's restore undoes a forget; pins, scope and review are the person's
        forgets = [op for op in said if op.target == crystal.id and op.change in (Change.FORGET, Change.RESTORE)]
        if crystal.forgotten is False and any(
            f.change is Change.FORGET and f.speaker is Speaker.PERSON for f in forgets
        ):
            assert any(f.change is Change.RESTORE and f.speaker is Speaker.PERSON for f in forgets)
        if crystal.pinned:
            assert any(
                op.change is Change.PIN and op.speaker is Speaker.PERSON and op.target == crystal.id for op in said
            )
        if crystal.scope != store.scope:
            assert any(
                op.change is Change.SCOPE and op.speaker is Speaker.PERSON and op.target == crystal.id for op in said
            )
        if crystal.review in ("released", "rejected"):
            assert any(op.change in (Change.RELEASE, Change.REJECT) and op.speaker is Speaker.PERSON
                       and op.target == crystal.id for op in said)  # fmt: skip


Devices.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestDevices = Devices.TestCase


def _history(seed: int) -> list[Operation]:
    machine = Devices()
    rng = random.Random(seed)
    for _ in range(60):
        device = rng.choice(DEVICES)
        speaker = rng.choice(SPEAKERS)
        if rng.random() < 0.3:
            machine.store(device, speaker, rng.random() < 0.2)
        elif rng.random() < 0.2:
            machine.sync(device, rng.choice(DEVICES))
        else:
            machine.change(device, speaker, rng.choice(CHANGES), rng.randrange(10_000), rng.randrange(10_000))
        machine.time_passes(rng.randrange(3))
    return machine.said


@given(seed=st.integers(0, 2**32), order=st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_any_order_and_any_repeat_fold_to_the_same_state(seed: int, order: random.Random) -> None:
    said = _history(seed)
    shuffled = said + order.sample(said, len(said) // 3)
    order.shuffle(shuffled)
    assert fold(shuffled) == fold(said)
    assert fold(shuffled).digest() == fold(said).digest()


def test_the_person_s_edit_stays_current_against_a_later_edit_by_the_agent() -> None:
    now = [10]
    laptop, desktop = Device("laptop", now), Device("desktop", now)
    laptop.make(Speaker.AGENT, Change.STORE, "c1", text="The Berlin trip is in May", semantic_type="fact")
    meet(laptop, desktop)
    desktop.make(Speaker.PERSON, Change.EDIT, "c1", text="The Berlin trip is in June")
    now[0] += 1_000  # the agent's edit is later, made on a laptop that has not seen the person's
    laptop.make(Speaker.AGENT, Change.EDIT, "c1", text="The Berlin trip is in July")
    meet(laptop, desktop)
    crystal = laptop.state().crystals["c1"]
    assert crystal.text == "The Berlin trip is in June" and crystal.speaker is Speaker.PERSON
    assert crystal.history == ("The Berlin trip is in May", "The Berlin trip is in July")
    assert laptop.state() == desktop.state()


def test_an_erasure_reaches_a_device_that_edited_meanwhile_and_leaves_no_word() -> None:
    now = [10]
    laptop, desktop, pi = (Device(name, now) for name in DEVICES)
    laptop.make(Speaker.PERSON, Change.STORE, "c1", text="my PIN is 4921")
    meet(laptop, desktop)
    meet(desktop, pi)
    pi.make(Speaker.PERSON, Change.EDIT, "c1", text="my PIN is 4922")  # apart from the others
    laptop.make(Speaker.PERSON, Change.ERASE, "c1")
    meet(laptop, desktop)
    meet(desktop, pi)
    meet(pi, laptop)
    for device in (laptop, desktop, pi):
        assert "c1" in device.state().erased and "c1" not in device.state().crystals
        assert all("4921" not in op.text and "4922" not in op.text for op in device.log.operations())


def test_the_agent_cannot_erase_pin_share_or_restore_even_from_another_device() -> None:
    now = [10]
    laptop = Device("laptop", now)
    laptop.make(Speaker.AGENT, Change.STORE, "c1", text="a note", scope="private")
    laptop.make(Speaker.PERSON, Change.FORGET, "c1")
    for change, fields in ((Change.ERASE, {}), (Change.PIN, {}), (Change.SCOPE, {"scope": "public"}),
                           (Change.RESTORE, {})):  # fmt: skip
        laptop.make(Speaker.AGENT, change, "c1", **fields)
    crystal = laptop.state().crystals["c1"]
    assert (crystal.pinned, crystal.scope, crystal.forgotten) == (False, "private", True)


def test_a_device_that_says_two_things_under_one_number_is_refused() -> None:
    log = OperationLog()
    first = Operation("laptop", 1, Stamp(1, 0, "laptop"), Speaker.PERSON, Change.STORE, "c1", text="one")
    log.add([first])
    with pytest.raises(SyncRefused, match="two things"):
        log.add([Operation("laptop", 1, Stamp(1, 0, "laptop"), Speaker.PERSON, Change.STORE, "c1", text="two")])
    assert log.add([first]).already == 1


def test_a_stamp_far_ahead_of_this_clock_is_refused() -> None:
    clock = HybridClock("laptop", lambda: 1_000)
    with pytest.raises(SyncRefused, match="ahead"):
        clock.seen(Stamp(1_000 + 300_001, 0, "desktop"))
    clock.seen(Stamp(1_000 + 300_000, 5, "desktop"))
    assert clock.tick() > Stamp(1_000 + 300_000, 5, "desktop")
