"""Which files ``memory import`` has fully imported, by content hash: an import that is run again
skips a file it finished, and one killed midway resumes at the first file it had not finished."""

from __future__ import annotations

from memory.storage.store import MemoryStore


async def imported_file_hash(store: MemoryStore, path: str) -> str | None:
    async with store.reader().execute("SELECT content_hash FROM imported_files WHERE path = ?", (path,)) as cur:
        row = await cur.fetchone()
    return str(row[0]) if row else None


async def mark_imported(store: MemoryStore, path: str, file_hash: str, crystals: int) -> None:
    """Record a file as fully imported (only after all its batches committed)."""
    async with store.transaction() as db:
        await db.execute(
            "INSERT INTO imported_files (path, content_hash, crystals, imported_ms) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(path) DO UPDATE SET content_hash = excluded.content_hash, crystals = excluded.crystals, "
            "imported_ms = excluded.imported_ms",
            (path, file_hash, crystals, store.now_ms()),
        )
