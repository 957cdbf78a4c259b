"""Following supersession: which crystal is current in place of a superseded one."""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

#: A chain longer than this is cut there (a fact corrected eight times is still found).
MAX_HOPS = 8


async def current_of(db: aiosqlite.Connection, crystal_ids: Sequence[str]) -> dict[str, str]:
    """For each of ``crystal_ids`` that is superseded, the crystal current now: the end of its chain
    of superseders (a cycle, which only hand-made supersessions could make, stops where it closes)."""
    head = {cid: cid for cid in crystal_ids}
    seen = {cid: {cid} for cid in crystal_ids}
    pending = list(crystal_ids)
    for _ in range(MAX_HOPS):
        if not pending:
            break
        at: dict[str, list[str]] = {}
        for cid in pending:
            at.setdefault(head[cid], []).append(cid)
        marks = ", ".join("?" * len(at))
        async with db.execute(
            f"SELECT id, superseded_by FROM crystals WHERE id IN ({marks}) AND superseded_by IS NOT NULL", tuple(at)
        ) as cursor:
            rows = await cursor.fetchall()
        pending = []
        for current, successor in rows:
            for start in at[current]:
                if successor not in seen[start]:
                    seen[start].add(successor)
                    head[start] = successor
                    pending.append(start)
    return {cid: end for cid, end in head.items() if end != cid}
