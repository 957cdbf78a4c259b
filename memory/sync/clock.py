"""A hybrid logical clock: stamps that follow the wall clock but never run backwards, and are
always later than any stamp this device has seen, so that a change made after seeing another is
ordered after it even when the two devices' clocks disagree.

Stamps order changes the merge cannot tell apart otherwise ("the later edit is current"). A stamp
from another device far in the future would pin every later change behind it, so ``seen`` refuses
one more than ``max_ahead_ms`` ahead of this device's wall clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.errors import SyncRefused

#: How far ahead of this device's wall clock a stamp from another device may be (5 minutes).
MAX_AHEAD_MS = 300_000


@dataclass(frozen=True, slots=True, order=True)
class Stamp:
    """When a change was made: wall milliseconds, a counter for changes within one millisecond,
    and the device, which breaks the last tie (so no two changes have equal stamps)."""

    wall_ms: int
    counter: int
    device: str


class HybridClock:
    def __init__(self, device: str, now_ms: Callable[[], int], *, max_ahead_ms: int = MAX_AHEAD_MS) -> None:
        self._device = device
        self._now_ms = now_ms
        self._max_ahead_ms = max_ahead_ms
        self._wall = 0
        self._counter = 0

    def tick(self) -> Stamp:
        """The stamp of a change made here now."""
        now = self._now_ms()
        if now > self._wall:
            self._wall, self._counter = now, 0
        else:
            self._counter += 1
        return Stamp(self._wall, self._counter, self._device)

    def seen(self, stamp: Stamp) -> None:
        """Move past a stamp received from another device (refused if too far ahead)."""
        if stamp.wall_ms > self._now_ms() + self._max_ahead_ms:
            raise SyncRefused(f"a change stamped {stamp.wall_ms - self._now_ms()} ms ahead of this device's clock")
        if (stamp.wall_ms, stamp.counter) > (self._wall, self._counter):
            self._wall, self._counter = stamp.wall_ms, stamp.counter

    def resume(self, stamp: Stamp) -> None:
        """Start after the latest stamp this device made before it restarted, even if the wall clock
        went back meanwhile (no check: it is this device's own)."""
        if (stamp.wall_ms, stamp.counter) > (self._wall, self._counter):
            self._wall, self._counter = stamp.wall_ms, stamp.counter
