"""Changing a stored crystal's scope: who it may be given to (``Scope``), the person's decision alone.

A crystal is stored ``private`` unless its caller said otherwise, and a crystallised skill is
too. Offering it to others (``skills publish``) first makes it ``public`` here, with an
attribution row naming who changed it and why, so ``memory show`` tells when it stopped being
private. The authority table's ``CHANGE_SCOPE`` is asked before anything is written; a crystal
another node sent keeps its scope (it is its author's to give, not this node's).
"""

from __future__ import annotations

from ground.authority import Capability, Speaker, require
from memory.errors import EditRefused
from memory.model import Crystal, Origin, Scope
from memory.storage.row_writes import crystal_any
from memory.storage.store import MemoryStore


async def change_scope(
    store: MemoryStore, crystal_id: str, scope: Scope, *, speaker: Speaker, actor: str, reason: str
) -> Crystal:
    """Give ``crystal_id`` ``scope`` (``NotAllowed`` unless ``speaker`` may change scope); the crystal
    as it now stands. Nothing is written when it already has that scope."""
    require(speaker, Capability.CHANGE_SCOPE, f"changing the scope of {crystal_id}")
    crystal = await store.get(crystal_id)
    if crystal.origin is Origin.PEER:
        raise EditRefused(f"{crystal_id} came from another node: its scope is its author's, not this node's")
    if crystal.scope is scope:
        return crystal
    now = store.now_ms()
    async with store.transaction() as db:
        await db.execute(
            "UPDATE crystals SET scope = ?, updated_at_ms = ? WHERE id = ?", (scope.value, now, crystal_id)
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'scope', ?, ?)",
            (crystal_id, actor, now, f"{crystal.scope.value} -> {scope.value}: {reason}"[:500]),
        )
    return await crystal_any(store.reader(), crystal_id)
