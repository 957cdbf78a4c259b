"""The model of a device's operation log for the pure merge test (``test_sync_merge``): the
operations a device holds, by author and sequence, and what two devices must send each other
(version vectors). The daemon keeps the same rules in SQL (``memory.sync.rows``), which the model
test on real stores checks (``test_sync_model``).

A device's operations are numbered 1, 2, 3, ... with no gap. What a device has of an author is the
longest run from 1 (its version vector entry); an operation past a gap is kept and waits. Anything
an author is shown to have said twice under one number is refused: the first one stands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ground.authority import may
from memory.errors import SyncRefused
from memory.sync.operations import NEEDS, Change, Operation

VersionVector = Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Added:
    new: int  # operations taken
    already: int  # operations this log held already


class OperationLog:
    def __init__(self, operations: Iterable[Operation] = ()) -> None:
        self._ops: dict[tuple[str, int], Operation] = {}
        self._run: dict[str, int] = {}  # the longest run from 1, by author
        self._erased: set[str] = set()
        self.add(operations)

    def add(self, operations: Iterable[Operation]) -> Added:
        new = already = 0
        for op in operations:
            held = self._ops.get(op.key)
            if held is not None:
                emptied = held.emptied or op.emptied  # the same change, its words taken out on one side
                if held != op and not (emptied and held.emptied_of_words() == op.emptied_of_words()):
                    raise SyncRefused(f"device {op.device} said two things as its change {op.seq}")
                already += 1
                continue
            if op.seq < 1:
                raise SyncRefused(f"device {op.device}'s change number {op.seq} is not a sequence number")
            self._ops[op.key] = op.emptied_of_words() if op.target in self._erased else op
            new += 1
            if op.change is Change.ERASE and may(op.speaker, NEEDS[Change.ERASE]):
                self._erase(op.target)
            run = self._run.get(op.device, 0)
            while (op.device, run + 1) in self._ops:
                run += 1
            self._run[op.device] = run
        return Added(new, already)

    def _erase(self, target: str) -> None:
        """Take the words of every operation about an erased crystal out of this log."""
        self._erased.add(target)
        for key, op in self._ops.items():
            if op.target == target:
                self._ops[key] = op.emptied_of_words()

    @property
    def vector(self) -> dict[str, int]:
        return dict(self._run)

    def missing_from(self, theirs: VersionVector) -> list[Operation]:
        """What this log holds that a device with vector ``theirs`` has not, each author's in order."""
        out = []
        for device, run in self._run.items():
            out += [self._ops[(device, seq)] for seq in range(theirs.get(device, 0) + 1, run + 1)]
        return sorted(out, key=lambda op: op.stamp)

    def operations(self) -> list[Operation]:
        return list(self._ops.values())

    def next_seq(self, device: str) -> int:
        return self._run.get(device, 0) + 1
