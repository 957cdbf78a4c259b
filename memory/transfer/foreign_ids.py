"""Which crystals an unvouched-for export created here, remembered across an interrupted restore.

Such a file's links and supersessions are applied only among crystals it created (``restore``): a
stranger's file never touches what was here before it. Run again after a cut (Ctrl-C, ``kill -9``),
the crystals the first run created are here already, and the file would take them for what was here
before, dropping every link and supersession that reaches them. So before a batch is stored, each
record is written down (per file, by the file's SHA-256) with whether its text was here before; the
rerun reads that back. Written before the crystals, in its own transaction: a cut between the two
leaves intents whose crystals are missing, which the rerun simply stores. The rows are dropped once
the restore completes."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import BinaryIO

from memory.model import Crystal
from memory.storage.connection import select_in
from memory.storage.store import MemoryStore

_BLOCK = 1 << 20


def source_key(handle: BinaryIO) -> str:
    """The SHA-256 of the open file, read from its start; the handle is left at its start."""
    handle.seek(0)
    digest = hashlib.sha256()
    while block := handle.read(_BLOCK):
        digest.update(block)
    handle.seek(0)
    return digest.hexdigest()


async def recall(store: MemoryStore, source: str, records: Sequence[Crystal]) -> dict[str, tuple[str, bool]]:
    """For each of ``records`` an earlier run of this file wrote down and whose crystal is here: its
    id in the file -> (the crystal holding its text, whether the file created it)."""
    if not records:
        return {}
    rows = await select_in(
        store.reader(),
        "SELECT f.source, f.file_id, c.id, f.was_here FROM foreign_export_ids f JOIN crystals c "
        "ON c.content_hash = f.content_hash WHERE f.file_id IN ({marks})",
        [c.id for c in records],
    )
    return {str(file_id): (str(cid), not was_here) for key, file_id, cid, was_here in rows if key == source}


async def intend(store: MemoryStore, source: str, records: Sequence[Crystal]) -> None:
    """Write down ``records`` before they are stored, each with whether its text is here already."""
    if not records:
        return
    async with store.transaction() as db:
        here = {
            str(r[0])
            for r in await select_in(
                db,
                "SELECT content_hash FROM crystals WHERE content_hash IN ({marks})",
                [c.content_hash for c in records],
            )
        }
        await db.executemany(
            "INSERT OR REPLACE INTO foreign_export_ids (source, file_id, content_hash, was_here) VALUES (?, ?, ?, ?)",
            [(source, c.id, c.content_hash, int(c.content_hash in here)) for c in records],
        )


async def forget(store: MemoryStore, source: str) -> None:
    """The restore of ``source`` completed: nothing of it needs remembering."""
    async with store.transaction() as db:
        await db.execute("DELETE FROM foreign_export_ids WHERE source = ?", (source,))
