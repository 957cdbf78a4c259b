"""Where a reader of chain events got to, kept in the database (the ``chain_cursors`` table), so a
restart reads on from there instead of from block 0; and which blocks a round reads (``window``).

A round reads from ``reorg_blocks`` below the cursor up to ``confirmations`` below the head: events
in the last blocks are not acted on until they are that deep, and the blocks just below are read
again, so an event a reorg moved is still seen. Whoever acts on an event makes that harmless twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True)
class Window:
    start: int
    end: int  # inclusive


def window(cursor: int, head: int, *, confirmations: int, reorg_blocks: int) -> Window | None:
    """The blocks to read now (pure); None when no block is confirmed past what was read."""
    end = head - confirmations
    if end < 0 or end < cursor:
        return None
    return Window(max(0, cursor - reorg_blocks), end)


async def cursor(store: MemoryStore, reader: str, chain_id: int, contract: str) -> int:
    """The first block ``reader`` has not read of ``contract``'s events on ``chain_id`` (0: none read)."""
    async with store.reader().execute(
        "SELECT next_block FROM chain_cursors WHERE reader = ? AND chain_id = ? AND contract = ?",
        (reader, chain_id, contract.lower()),
    ) as rows:
        row = await rows.fetchone()
    return int(row[0]) if row else 0


async def advance(store: MemoryStore, reader: str, chain_id: int, contract: str, next_block: int) -> None:
    """Keep that ``reader`` has read up to ``next_block`` (exclusive); never moves back."""
    async with store.transaction() as db:
        await db.execute(
            "INSERT INTO chain_cursors (reader, chain_id, contract, next_block) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (reader, chain_id, contract) DO UPDATE SET next_block = excluded.next_block "
            "WHERE excluded.next_block > chain_cursors.next_block",
            (reader, chain_id, contract.lower(), next_block),
        )
