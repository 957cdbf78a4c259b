"""Freshness checks for signed messages: a timestamp window and a bounded replay guard."""

from __future__ import annotations

import heapq
from collections import OrderedDict
from dataclasses import dataclass

from crypto.errors import Expired, FromFuture, InvalidValue, Replayed, ReplayUndecidable


@dataclass(frozen=True, slots=True)
class TimestampWindow:
    """Accept timestamps from ``max_age_ms`` in the past to ``max_ahead_ms`` in the future."""

    max_age_ms: int = 300_000
    max_ahead_ms: int = 60_000

    def check(self, ts_ms: int, now_ms: int) -> None:
        if ts_ms < now_ms - self.max_age_ms:
            raise Expired(ts_ms, now_ms, self.max_age_ms)
        if ts_ms > now_ms + self.max_ahead_ms:
            raise FromFuture(ts_ms, now_ms, self.max_ahead_ms)


class ReplayGuard:
    """Remembers (author, nonce) pairs for as long as the timestamp window could accept them.

    Memory is bounded by ``max_entries``. Entries older than ``horizon_ms``
    (which should be at least the window's max age plus its max ahead) are
    dropped, since the window rejects their timestamps anyway. If a flood fills
    the guard before that, the oldest entries are evicted and a *floor* is
    raised to their timestamp, for their author only: anything of that author at
    or below it is refused as a possible replay. So the guard may refuse an old
    genuine message of an author whose entries it had to drop, but never accepts a
    replay, and one author's flood never raises the floor of another (issue 27:
    a flood of fresh keys made honest newcomers' messages undecidable). The
    per-author floors are bounded too: when one must go, the floor every author
    shares rises to it, so nothing is ever forgotten without a floor covering it.
    """

    def __init__(self, *, horizon_ms: int = 360_000, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise InvalidValue("max_entries must be positive")
        self._horizon_ms = horizon_ms
        self._max_entries = max_entries
        self._seen: set[bytes] = set()
        self._by_time: list[tuple[int, bytes, bytes]] = []  # (ts, author + nonce, author)
        self._floors: OrderedDict[bytes, int] = OrderedDict()  # author -> its floor, oldest raised first
        self._floor_ms = -1  # every author's floor

    def __len__(self) -> int:
        return len(self._seen)

    @property
    def floor_ms(self) -> int:
        """The floor every author shares (raised only when a per-author floor had to be dropped)."""
        return self._floor_ms

    def floor_of(self, author: bytes) -> int:
        return max(self._floor_ms, self._floors.get(author, -1))

    def check(self, author: bytes, nonce: bytes, ts_ms: int, now_ms: int) -> None:
        """Raise ``Replayed`` if seen, ``ReplayUndecidable`` if too old to tell; remember nothing."""
        self._expire(now_ms)
        if author + nonce in self._seen:
            raise Replayed(author, nonce)
        if ts_ms < now_ms - self._horizon_ms:
            # Without this the guard would depend on a window check elsewhere.
            raise ReplayUndecidable(author, ts_ms, "older than the replay horizon")
        if ts_ms <= self.floor_of(author):
            raise ReplayUndecidable(author, ts_ms, "older than what the replay guard still remembers")

    def record(self, author: bytes, nonce: bytes, ts_ms: int) -> None:
        """Remember a pair ``check`` passed (a caller may rate-limit in between, so that a refused
        message costs no memory)."""
        key = author + nonce
        if key in self._seen:
            return
        self._seen.add(key)
        heapq.heappush(self._by_time, (ts_ms, key, author))
        while len(self._seen) > self._max_entries:
            old_ts, old_key, old_author = heapq.heappop(self._by_time)
            self._seen.discard(old_key)
            self._floors[old_author] = max(self._floors.get(old_author, -1), old_ts)
            self._floors.move_to_end(old_author)
            if len(self._floors) > self._max_entries:
                _, dropped = self._floors.popitem(last=False)
                self._floor_ms = max(self._floor_ms, dropped)

    def check_and_record(self, author: bytes, nonce: bytes, ts_ms: int, now_ms: int) -> None:
        """Raise ``Replayed`` if seen, ``ReplayUndecidable`` if too old to tell; otherwise remember it."""
        self.check(author, nonce, ts_ms, now_ms)
        self.record(author, nonce, ts_ms)

    def _expire(self, now_ms: int) -> None:
        cutoff = now_ms - self._horizon_ms
        while self._by_time and self._by_time[0][0] < cutoff:
            _, key, _ = heapq.heappop(self._by_time)
            self._seen.discard(key)
