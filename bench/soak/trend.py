"""Whether memory and descriptors stay flat (pure): samples of the daemon over the run, the first
and last after warm-up, and a least-squares slope per hour."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Sample:
    at_s: float  # since the soak began
    uptime_s: float  # since this run of the daemon began (a kill starts it again)
    rss_mb: float
    fds: int


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of (seconds, value) points, per hour; None under two distinct times."""
    if len({t for t, _ in points}) < 2:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_v = sum(v for _, v in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (v - mean_v) for t, v in points) / spread * 3600


def trend(samples: Sequence[Sample], warm_up_s: float) -> dict[str, Any]:
    """Start and end (the first and last sample taken at least ``warm_up_s`` into a daemon's run),
    the most seen, and the slope per hour, of resident memory and of descriptors."""
    steady = [s for s in samples if s.uptime_s >= warm_up_s] or list(samples)
    if not steady:
        return {"samples": 0}
    first, last = steady[0], steady[-1]
    rss_slope = slope_per_hour([(s.at_s, s.rss_mb) for s in steady])
    fd_slope = slope_per_hour([(s.at_s, float(s.fds)) for s in steady])
    return {
        "samples": len(steady),
        "warm_up_s": warm_up_s,
        "rss_mb": {"start": first.rss_mb, "end": last.rss_mb, "max": max(s.rss_mb for s in steady),
                   "slope_mb_per_h": None if rss_slope is None else round(rss_slope, 2)},
        "fds": {"start": first.fds, "end": last.fds, "max": max(s.fds for s in steady),
                "slope_per_h": None if fd_slope is None else round(fd_slope, 2)},
        "span_s": round(last.at_s - first.at_s, 1),
    }  # fmt: skip
