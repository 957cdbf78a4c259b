"""``memory retype``: the person corrects a crystal's type; the correction is kept in the
``type_corrections`` table as a labelled example the typer learns from (``memory.cognition.typer``)."""

from __future__ import annotations

import asyncio

from ground.authority import Capability, Speaker, may
from memory.cognition.typer import Typer
from memory.epistemic import layer_for
from memory.model import Crystal, SemanticType, TypeSource, content_hash
from memory.storage.row_writes import crystal_any
from memory.storage.store import MemoryStore


async def retype(
    store: MemoryStore,
    crystal_id: str,
    semantic_type: SemanticType,
    *,
    actor: str,
    speaker: Speaker,
    typer: Typer,
) -> Crystal:
    """Give a crystal the type ``speaker`` says it has; when that is the person, keep it as an example
    and refit ``typer`` (the intake's: ``memory.intake.store.IntakeStore.typer``).

    Its epistemic layer follows the new type. The attribution chain records the old and new type. The
    typer learns from the person alone: it types every later word, the person's too, so a correction
    is an order about the person's words (``Capability.OVERRIDE_PERSON``). The agent taught it, and six
    retyped notes of its own turned the person's next preference into a fact, out of the directives."""
    teaches = may(speaker, Capability.OVERRIDE_PERSON)
    now = store.now_ms()
    async with store.transaction() as db:
        crystal = await crystal_any(db, crystal_id)
        if crystal.semantic_type is semantic_type and crystal.type_source is TypeSource.CORRECTION:
            return crystal
        layer = layer_for(crystal.text, semantic_type, crystal.origin, crystal.speaker)
        skill_id = content_hash(crystal.text)[:16] if semantic_type is SemanticType.SKILL else None
        await db.execute(
            "UPDATE crystals SET semantic_type = ?, type_confidence = 1.0, type_source = ?, epistemic_layer = ?, "
            "stable_skill_id = coalesce(stable_skill_id, ?), skill_version = coalesce(skill_version, ?), "
            "updated_at_ms = ? WHERE id = ?",
            (
                semantic_type.value, TypeSource.CORRECTION.value, layer.value, skill_id,
                1 if skill_id else None, now, crystal_id,
            ),
        )  # fmt: skip
        if teaches:
            await db.execute(
                "INSERT INTO type_corrections (content_hash, text, semantic_type, corrected_ms, actor) "
                "VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(content_hash) DO UPDATE SET semantic_type = excluded.semantic_type, "
                "corrected_ms = excluded.corrected_ms, actor = excluded.actor",
                (crystal.content_hash, crystal.text, semantic_type.value, now, actor),
            )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'retyped', ?, ?)",
            (crystal_id, actor, now, f"{crystal.semantic_type.value} -> {semantic_type.value}"),
        )
    if teaches:  # refitting takes a fraction of a second of numpy: off the event loop
        await asyncio.to_thread(typer.learn, crystal.text, semantic_type)
    return await crystal_any(store.reader(), crystal_id)
