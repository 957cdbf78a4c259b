"""Keeping a stored crystal: pinning gives it a permanent lifespan (no decay, no expiry)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.model import Crystal, Lifespan
from memory.storage.row_writes import crystal_any

if TYPE_CHECKING:
    from memory.storage.store import MemoryStore


async def pin(store: MemoryStore, crystal_id: str, *, actor: str) -> Crystal:
    """Make a crystal permanent, as ``remember --pin`` does at storing time; recorded in its
    attribution chain with the lifespan it had. Pinning a pinned crystal changes nothing."""
    now = store.now_ms()
    async with store.transaction() as db:
        crystal = await crystal_any(db, crystal_id)
        if crystal.lifespan is Lifespan.PERMANENT:
            return crystal
        await db.execute(
            "UPDATE crystals SET lifespan = ?, expires_at_ms = NULL, updated_at_ms = ? WHERE id = ?",
            (Lifespan.PERMANENT.value, now, crystal_id),
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'pinned', ?, ?)",
            (crystal_id, actor, now, f"{crystal.lifespan.value} -> {Lifespan.PERMANENT.value}"),
        )
    return await crystal_any(store.reader(), crystal_id)
