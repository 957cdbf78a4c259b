"""The one wall clock of the node, in integer milliseconds since the epoch, and the type of an
injected clock (tests pass their own: they move time instead of sleeping)."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000
