"""How many crystals the store holds, by each closed set (lifecycle, type, origin, sensitivity,
scope), in total, and how many links join them: the counts ``stats`` reports."""

from __future__ import annotations

from typing import Any

import aiosqlite

COUNTED_COLUMNS = ("lifecycle", "semantic_type", "origin", "sensitivity", "scope")


async def crystal_counts(db: aiosqlite.Connection) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in COUNTED_COLUMNS:
        async with db.execute(f"SELECT {column}, count(*) FROM crystals GROUP BY {column}") as cursor:
            out[f"by_{column}"] = {r[0]: r[1] for r in await cursor.fetchall()}
    out["total"] = await crystal_total(db)
    async with db.execute("SELECT count(*) FROM associations") as cursor:
        out["associations"] = (await cursor.fetchone() or (0,))[0]
    return out


async def crystal_total(db: aiosqlite.Connection, semantic_type: str | None = None) -> int:
    """How many crystals there are (of one type): one count, without the breakdowns of ``crystal_counts``."""
    params: tuple[str, ...] = () if semantic_type is None else (semantic_type,)
    where = "" if semantic_type is None else " WHERE semantic_type = ?"
    async with db.execute("SELECT count(*) FROM crystals" + where, params) as cursor:
        return int((await cursor.fetchone() or (0,))[0])
