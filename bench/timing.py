"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def rate_per_s(func: Callable[[], int], *, rounds: int) -> float:
    """Best of ``rounds`` runs of ``func`` (which returns how many operations it did), in ops/s.

    Best-of rather than mean: on a shared 2-core machine the noise only ever slows a run down.
    """
    best = 0.0
    for _ in range(rounds):
        started = time.perf_counter()
        ops = func()
        best = max(best, ops / (time.perf_counter() - started))
    return best


def percentiles_ms(samples_s: list[float]) -> dict[str, float]:
    ordered = sorted(samples_s)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return {
        "p50_ms": round(pick(0.50), 3),
        "p95_ms": round(pick(0.95), 3),
        "p99_ms": round(pick(0.99), 3),
        "mean_ms": round(statistics.fmean(ordered) * 1000, 3),
    }
