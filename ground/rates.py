"""Rate limits: per-key token buckets with bounded memory (a flood of fresh keys costs a reset,
never unbounded growth)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RateLimit:
    per_s: float
    burst: int


class TokenBuckets:
    """Per-key token buckets: ``allow`` spends one token if there is one."""

    def __init__(self, limit: RateLimit, max_keys: int = 100_000) -> None:
        self._limit = limit
        self._max_keys = max_keys
        self._buckets: dict[bytes, tuple[float, int]] = {}  # key -> (tokens, last refill ms)

    def allow(self, key: bytes, now_ms: int) -> bool:
        tokens, last = self._buckets.get(key, (float(self._limit.burst), now_ms))
        tokens = min(float(self._limit.burst), tokens + max(0, now_ms - last) * self._limit.per_s / 1000)
        allowed = tokens >= 1.0
        if len(self._buckets) >= self._max_keys and key not in self._buckets:
            self._buckets.clear()  # bounded memory: a reset is generous, never unsafe for honest peers
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now_ms)
        return allowed
