"""Quotas on what peers may store here: count and bytes, per author and in total.

Peers' keys cost nothing, so what they gossip into this memory is bounded twice: each
author (``source`` ``peer:<key hex>``) may keep at most so many crystals and bytes of
text, and all of them together at most so many. Past a quota, crystals are deleted for
good (not expired: the point is the disk), least trusted author first and, among
authors trusted alike, oldest first; within one author's own quota, its oldest first.

Counted: live crystals from peers that arrived by gossip (origin ``peer``, scope
``shared``). Not counted, and never evicted: what this node bought (stored private) and
what the person approved out of quarantine (it is theirs now). The audit log keeps a
row for each eviction; a rejected text's record stays, so it is still refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

import aiosqlite

from memory.storage.store import MemoryStore

#: Rows counted by a quota; the partial index ``crystals_peer_content`` covers exactly these.
_COUNTED = (
    "origin = 'peer' AND scope = 'shared' AND lifecycle != 'expired' "
    "AND id NOT IN (SELECT crystal_id FROM quarantine WHERE status = 'approved')"
)
_ACTOR = "quota"
_PAGE = 256


@dataclass(frozen=True, slots=True)
class PeerContentQuota:
    per_author_crystals: int = 200
    per_author_bytes: int = 2 * 1024 * 1024
    total_crystals: int = 20_000
    total_bytes: int = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Usage:
    crystals: int
    bytes: int

    def over(self, crystals: int, size: int) -> bool:
        return self.crystals > crystals or self.bytes > size


@dataclass(frozen=True, slots=True)
class Evicted:
    crystals: int = 0
    bytes: int = 0

    def __add__(self, other: Evicted) -> Evicted:
        return Evicted(self.crystals + other.crystals, self.bytes + other.bytes)


#: How much a source's author is trusted here, higher first kept: e.g. (level order, combined score).
Standing = Callable[[str], tuple[int, float]]


async def usage_by_source(db: aiosqlite.Connection) -> dict[str, Usage]:
    async with db.execute(
        f"SELECT source, count(*), coalesce(sum(text_bytes), 0) FROM crystals WHERE {_COUNTED} GROUP BY source"
    ) as cursor:
        return {str(source): Usage(int(n), int(size)) for source, n, size in await cursor.fetchall()}


async def _pick(
    db: aiosqlite.Connection, sources: list[str], usage: Usage, crystals: int, size: int
) -> list[tuple[int, str, int]]:
    """The oldest rows of ``sources``, the fewest that bring ``usage`` within the limits (read a page
    at a time: the least trusted tier may hold most of the quota)."""
    marks = ", ".join("?" * len(sources))
    chosen: list[tuple[int, str, int]] = []
    left, after = usage, (-1, -1)
    while left.over(crystals, size):
        async with db.execute(
            f"SELECT rowid, id, text_bytes, stored_at_ms FROM crystals WHERE {_COUNTED} AND source IN ({marks}) "
            "AND (stored_at_ms, rowid) > (?, ?) ORDER BY stored_at_ms, rowid LIMIT ?",
            (*sources, *after, _PAGE),
        ) as cursor:
            page = list(await cursor.fetchall())
        if not page:
            break
        for rowid, cid, text_bytes, stored in page:
            if not left.over(crystals, size):
                break
            chosen.append((int(rowid), str(cid), int(text_bytes)))
            left = Usage(left.crystals - 1, left.bytes - int(text_bytes))
            after = (int(stored), int(rowid))
    return chosen


async def _evict(store: MemoryStore, db: aiosqlite.Connection, rows: list[tuple[int, str, int]], why: str) -> Evicted:
    if not rows:
        return Evicted()
    now = store.now_ms()
    await db.executemany(
        "INSERT INTO audit_log (crystal_id, from_state, to_state, reason, actor, ts_ms) "
        "SELECT id, lifecycle, 'expired', ?, ?, ? FROM crystals WHERE rowid = ?",
        [(why, _ACTOR, now, rowid) for rowid, _, _ in rows],
    )
    await store.delete_physically(db, [(rowid, cid) for rowid, cid, _ in rows])
    return Evicted(len(rows), sum(size for _, _, size in rows))


async def enforce(store: MemoryStore, quota: PeerContentQuota, author_source: str, standing: Standing) -> Evicted:
    """Bring ``author_source`` within its own quota, then all peers within the total; what was deleted."""
    async with store.transaction() as db:
        usage = await usage_by_source(db)
        evicted = Evicted()
        own = usage.get(author_source)
        if own is not None and own.over(quota.per_author_crystals, quota.per_author_bytes):
            rows = await _pick(db, [author_source], own, quota.per_author_crystals, quota.per_author_bytes)
            evicted += await _evict(store, db, rows, "evicted: over its author's peer content quota")
            usage[author_source] = Usage(own.crystals - len(rows), own.bytes - sum(r[2] for r in rows))
        total = Usage(sum(u.crystals for u in usage.values()), sum(u.bytes for u in usage.values()))
        if not total.over(quota.total_crystals, quota.total_bytes):
            return evicted
        for _, tier in groupby(sorted(usage, key=standing), key=standing):  # least trusted tier first
            rows = await _pick(db, list(tier), total, quota.total_crystals, quota.total_bytes)
            evicted += await _evict(store, db, rows, "evicted: over the total peer content quota")
            total = Usage(total.crystals - len(rows), total.bytes - sum(r[2] for r in rows))
            if not total.over(quota.total_crystals, quota.total_bytes):
                break
        return evicted
