"""Replay guard and timestamp window: bounded memory, and never a replay accepted."""

from __future__ import annotations

import pytest

from crypto.errors import Expired, FromFuture, Replayed, ReplayUndecidable
from crypto.windows import ReplayGuard, TimestampWindow

A = b"a" * 32
B = b"b" * 32


def nonce(i: int) -> bytes:
    return i.to_bytes(16, "big")


def test_same_author_and_nonce_is_a_replay_but_other_pairs_are_not() -> None:
    guard = ReplayGuard()
    guard.check_and_record(A, nonce(1), 1_000, 1_000)
    guard.check_and_record(B, nonce(1), 1_000, 1_000)
    guard.check_and_record(A, nonce(2), 1_000, 1_000)
    with pytest.raises(Replayed):
        guard.check_and_record(A, nonce(1), 1_000, 2_000)


def test_entries_past_the_horizon_are_forgotten_and_their_replays_refused_by_age() -> None:
    guard = ReplayGuard(horizon_ms=10_000)
    guard.check_and_record(A, nonce(1), 0, 0)
    guard.check_and_record(A, nonce(2), 20_000, 20_000)  # expires the first
    assert len(guard) == 1
    with pytest.raises(ReplayUndecidable, match="horizon"):
        guard.check_and_record(A, nonce(1), 0, 20_000)


def test_memory_is_bounded_and_eviction_raises_a_floor_instead_of_forgetting() -> None:
    guard = ReplayGuard(horizon_ms=10**9, max_entries=100)
    for i in range(1_000):
        guard.check_and_record(A, nonce(i), i, 1_000)
    assert len(guard) == 100
    assert guard.floor_ms == 899
    # An evicted message replayed is still refused (via the floor), as undecidable rather than a replay.
    with pytest.raises(ReplayUndecidable, match="remembers"):
        guard.check_and_record(A, nonce(5), 5, 1_000)
    # A remembered one is refused as seen; a new, newer one is accepted.
    with pytest.raises(Replayed, match="already seen"):
        guard.check_and_record(A, nonce(950), 950, 1_000)
    guard.check_and_record(A, nonce(5_000), 1_000, 1_000)


def test_timestamp_window_bounds_are_inclusive() -> None:
    window = TimestampWindow(max_age_ms=300_000, max_ahead_ms=60_000)
    window.check(700_000, 1_000_000)
    window.check(1_060_000, 1_000_000)
    with pytest.raises(Expired):
        window.check(699_999, 1_000_000)
    with pytest.raises(FromFuture):
        window.check(1_060_001, 1_000_000)
