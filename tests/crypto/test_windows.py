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
    assert guard.floor_of(A) == 899 and guard.floor_ms == -1  # A's floor, nobody else's
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


def test_one_authors_flood_never_raises_another_authors_floor() -> None:
    """Issue 27: a flood from fresh keys raised the strangers' replay floor, and honest newcomers'
    messages were dropped as undecidable."""
    guard = ReplayGuard(horizon_ms=10**9, max_entries=100)
    guard.check_and_record(B, nonce(1), 10, 2_000)  # an honest newcomer's message ...
    for i in range(1_000):  # ... then a flood from A, newer than it
        guard.check_and_record(A, nonce(i), 100 + i, 2_000)
    guard.check_and_record(B, nonce(2), 20, 2_000)  # B's next, older than the flood: still decidable
    with pytest.raises((Replayed, ReplayUndecidable)):
        guard.check_and_record(B, nonce(1), 10, 2_000)  # B's first: evicted, but under B's own floor


def test_per_author_floors_are_bounded_and_a_dropped_one_raises_everyones_floor() -> None:
    guard = ReplayGuard(horizon_ms=10**9, max_entries=3)
    authors = [bytes([i]) * 32 for i in range(10)]
    for i, author in enumerate(authors):
        guard.check_and_record(author, nonce(i), i, 1_000)
    assert len(guard) == 3
    # Seven evicted; three per-author floors are kept, the rest were folded into the shared floor.
    assert guard.floor_ms >= 2
    for i, author in enumerate(authors[:7]):
        with pytest.raises((Replayed, ReplayUndecidable)):
            guard.check_and_record(author, nonce(i), i, 1_000)  # no evicted message is ever accepted again
