"""The one wall clock of the node, in integer milliseconds since the epoch, the type of an injected
clock (tests pass their own: they move time instead of sleeping), and how a time is written for
people and agents."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def iso_utc(ms: int) -> str:
    """A time as ISO 8601 in UTC, to the second (``2026-11-27T16:40:27Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))
