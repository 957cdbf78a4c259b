"""Times an input gives for what it holds (a transcript's timestamps, an export's ``created_at``, a
note's ``date``), taken as given only between 1970 and now.

A time in the future would put a crystal first in every "recent" search and keep it from decaying;
a time before 1970 is negative and sorts before everything. Such a time is clamped to the nearest
bound, and the crystal is tagged ``CLAMPED_TAG`` so the person can find (``memory list --tags``) and
correct it. A clock a little ahead of this node's is no lie: ``SKEW_MS`` of it is let through.
Pure: the crystal and the current time in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from memory.model import MAX_TAGS, NewCrystal

CLAMPED_TAG = "time-clamped"
SKEW_MS = 10 * 60_000


def clamped_time(ms: int | None, now_ms: int) -> tuple[int | None, bool]:
    """``ms`` held between 0 (1970) and ``now_ms`` (plus ``SKEW_MS``), and whether it was moved."""
    if ms is None:
        return None, False
    if ms < 0:
        return 0, True
    if ms > now_ms + SKEW_MS:
        return now_ms, True
    return ms, False


def with_given_time(item: NewCrystal, now_ms: int) -> NewCrystal:
    """``item`` with its time clamped (``clamped_time``) and tagged ``CLAMPED_TAG`` when it was moved."""
    ms, moved = clamped_time(item.created_at_ms, now_ms)
    if not moved:
        return item
    tags = item.tags if CLAMPED_TAG in item.tags else (*item.tags[: MAX_TAGS - 1], CLAMPED_TAG)
    return replace(item, created_at_ms=ms, tags=tags)


def all_with_given_time(items: Iterable[NewCrystal], now_ms: int) -> list[NewCrystal]:
    return [with_given_time(item, now_ms) for item in items]
