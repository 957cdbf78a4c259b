"""Keeping a stored crystal for good, which adopts it: pinning gives it a permanent lifespan (no decay,
no expiry), and the person who pins it vouches for it: its words become the person's own, with the
epistemic layer the person's words get (``ground.authority``; saying a stored text again does the
same for a speaker who stands higher: ``memory.storage.row_writes.said_again``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ground.authority import Capability, Speaker, require
from memory.epistemic import layer_for
from memory.model import Crystal, Lifespan
from memory.storage.row_writes import crystal_any

if TYPE_CHECKING:
    from memory.storage.store import MemoryStore


async def pin(store: MemoryStore, crystal_id: str, *, actor: str, speaker: Speaker) -> Crystal:
    """Make a crystal permanent, as ``remember --pin`` does at storing time, which only a speaker that
    may direct does (``NotAllowed`` otherwise). Pinning adopts the words: a captured turn, a file's
    line or the agent's note the person pins is the person's from then on (a directive, if it reads
    as one), and the attribution chain keeps who said it first. Pinning a pinned crystal of the
    pinner's own changes nothing."""
    require(speaker, Capability.DIRECT, f"pinning {crystal_id}")
    now = store.now_ms()
    async with store.transaction() as db:
        crystal = await crystal_any(db, crystal_id)
        if crystal.lifespan is Lifespan.PERMANENT and crystal.speaker is speaker:
            return crystal
        layer = layer_for(crystal.text, crystal.semantic_type, crystal.origin, speaker)
        await db.execute(
            "UPDATE crystals SET lifespan = ?, expires_at_ms = NULL, speaker = ?, epistemic_layer = ?, "
            "updated_at_ms = ? WHERE id = ?",
            (Lifespan.PERMANENT.value, speaker.value, layer.value, now, crystal_id),
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'pinned', ?, ?)",
            (crystal_id, actor, now, f"{crystal.lifespan.value} -> {Lifespan.PERMANENT.value}"),
        )
        if crystal.speaker is not speaker:
            await db.execute(
                "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'adopted', ?, ?)",
                (crystal_id, actor, now, f"said by {crystal.speaker.value}, vouched for by {speaker.value}"),
            )
    return await crystal_any(store.reader(), crystal_id)
