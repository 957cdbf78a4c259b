"""Forgetting that leaves nothing to read: the crystal's text out of the database file, its WAL and
its keyword index at once (issue 32: a forgotten password stayed on disk for 30 days).

What goes: the crystal's row and all that hangs on it (``row_writes.delete_rows``), its text
quoted in other crystals' context (a conversation turn's neighbours), a type correction that kept
its text, and the details of its attribution rows (a reason may quote its words). What stays: one
audit row saying it was erased, by whom and why, without the text. SQLite's ``secure_delete``
zeroes the freed pages, the FTS index is rewritten without the crystal's terms (``optimize``), and
the WAL, which holds earlier images of those pages, is checkpointed and truncated.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiosqlite

from memory.model import Lifecycle
from memory.storage.row_writes import crystal_any, write_transitions
from memory.storage.store import MemoryStore

#: Stands where the erased text was quoted in another crystal's context.
ERASED_MARK = "[forgotten]"


@dataclass(frozen=True, slots=True)
class Erased:
    crystal_id: str
    contexts_scrubbed: int  # other crystals whose context quoted the text
    wal_truncated: bool  # False while a reader held an old snapshot: the next checkpoint folds it


@asynccontextmanager
async def _zeroing(store: MemoryStore) -> AsyncIterator[aiosqlite.Connection]:
    """A write transaction whose freed pages are zeroed. The switch belongs to the one writer
    connection, so it is turned on and back off inside the write lock: turned outside it, one erase
    ending switched it off under another that was waiting for the lock, whose text then stayed."""
    async with store.transaction() as db:
        await db.execute("PRAGMA secure_delete = ON")
        try:
            yield db
        finally:
            await db.execute("PRAGMA secure_delete = OFF")


async def erase(store: MemoryStore, crystal_id: str, *, actor: str, reason: str) -> Erased:
    """Erase one crystal for good (see the module's notes). Raises ``CrystalNotFound``."""
    async with _zeroing(store) as db:
        crystal = await crystal_any(db, crystal_id)
        async with db.execute("SELECT rowid FROM crystals WHERE id = ?", (crystal_id,)) as cursor:
            rowid = int((await cursor.fetchone() or (0,))[0])
        async with db.execute(
            "UPDATE crystals SET context = replace(context, ?, ?) WHERE context IS NOT NULL AND instr(context, ?) > 0",
            (crystal.text, ERASED_MARK, crystal.text),
        ) as cursor:
            scrubbed = cursor.rowcount
        await db.execute("DELETE FROM type_corrections WHERE content_hash = ?", (crystal.content_hash,))
        await db.execute("UPDATE attributions SET detail = NULL WHERE crystal_id = ?", (crystal_id,))
        # the one row that stays: that it was erased, by whom and why, without the text
        await write_transitions(
            db, [(crystal_id, crystal.lifecycle, Lifecycle.EXPIRED, f"erased: {reason}")], actor, store.now_ms()
        )
        await store.delete_physically(db, [(rowid, crystal_id)])
    async with _zeroing(store) as db:
        await db.execute("INSERT INTO crystals_fts (crystals_fts) VALUES ('optimize')")
    truncated = await store.checkpoint(truncate=True)
    return Erased(crystal_id, max(scrubbed, 0), truncated)
