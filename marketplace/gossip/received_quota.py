"""Bounds on what peers publish to the market: listings and bounties, per key and in total.

Each listing keeps its signed envelope (a free skill's carries its whole text), and bounties
live up to 30 days, so a crowd of fresh keys could otherwise fill the disk and make every
listing and pricing call slower. Past a bound, rows are deleted: the least trusted key's
first and, among keys trusted alike, the oldest first. This node's own rows are never
counted or deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

import aiosqlite

from memory.storage.store import MemoryStore

#: How much a key (hex) is trusted here, higher kept longer: e.g. (level order, combined score).
KeyStanding = Callable[[str], tuple[int, float]]


@dataclass(frozen=True, slots=True)
class TableBound:
    """One table's bound: rows per key and in total, and the column naming the key."""

    table: str  # "listings" or "bounties": fixed names, never from input
    key_column: str
    per_key: int
    total: int


def listings_bound(per_seller: int, total: int) -> TableBound:
    return TableBound("listings", "seller", per_seller, total)


def bounties_bound(per_author: int, total: int) -> TableBound:
    return TableBound("bounties", "author", per_author, total)


async def _counts(db: aiosqlite.Connection, bound: TableBound, me: str) -> dict[str, int]:
    async with db.execute(
        f"SELECT {bound.key_column}, count(*) FROM {bound.table} WHERE {bound.key_column} != ? "  # noqa: S608
        f"GROUP BY {bound.key_column}",
        (me,),
    ) as cursor:
        return {str(k): int(n) for k, n in await cursor.fetchall()}


async def _delete_oldest(db: aiosqlite.Connection, bound: TableBound, keys: list[str], count: int) -> int:
    marks = ", ".join("?" * len(keys))
    cursor = await db.execute(
        f"DELETE FROM {bound.table} WHERE rowid IN (SELECT rowid FROM {bound.table} "  # noqa: S608
        f"WHERE {bound.key_column} IN ({marks}) ORDER BY received_ms, rowid LIMIT ?)",
        (*keys, count),
    )
    deleted = int(cursor.rowcount)
    await cursor.close()
    return deleted


async def enforce_bound(store: MemoryStore, bound: TableBound, key: str, standing: KeyStanding, me: str) -> int:
    """Bring ``key`` within its own bound, then every other key's rows within the total; rows deleted."""
    if key == me:
        return 0
    async with store.transaction() as db:
        counts = await _counts(db, bound, me)
        deleted = 0
        if counts.get(key, 0) > bound.per_key:
            deleted += await _delete_oldest(db, bound, [key], counts[key] - bound.per_key)
            counts[key] = bound.per_key
        excess = sum(counts.values()) - bound.total
        for _, tier in groupby(sorted(counts, key=standing), key=standing):  # least trusted tier first
            if excess <= 0:
                break
            gone = await _delete_oldest(db, bound, list(tier), excess)
            deleted, excess = deleted + gone, excess - gone
        return deleted
