"""Once a crystal is embedded, its automatic type is decided again by its words and its meaning.

The word model types a crystal when it is stored; its vector, when it comes, tells more in a voice
the examples never used (``memory.cognition.vector_typing``). Only a type the offline model chose is
refined: a caller's type, a correction, the ``[llm]`` endpoint's and a legacy type stand. A change is
written with the new epistemic layer and an attribution row, as ``memory retype`` writes one.
"""

from __future__ import annotations

import asyncio

from memory.cognition.typer import Typer
from memory.embedders.base import Vectors
from memory.epistemic import layer_for
from memory.errors import CrystalNotFound
from memory.model import SemanticType, TypeSource, content_hash
from memory.storage.row_writes import crystal_any
from memory.storage.store import MemoryStore

ACTOR = "typer"


async def refine_type(store: MemoryStore, typer: Typer, crystal_id: str, vector: Vectors) -> SemanticType | None:
    """Type the embedded crystal again by words and meaning (``typer``'s models: the intake's); the new
    type if it changed, else None."""
    try:
        crystal = await crystal_any(store.reader(), crystal_id)
    except CrystalNotFound:
        return None
    embedder = store.embedder
    if crystal.type_source is not TypeSource.MODEL or not embedder.carries_meaning:
        return None  # a hashing embedder's vectors say which words, not what kind of statement
    model = await asyncio.to_thread(typer.vector_model, embedder.id, embedder.embed_documents)
    if model.dimensions != len(vector):
        return None  # a vector of another space than the model's (an embedder change under way)
    guess = typer.refine(crystal.text, vector, model, chat=crystal.voice is not None)
    if guess.semantic_type is crystal.semantic_type:
        return None
    stype, now = guess.semantic_type, store.now_ms()
    skill_id = content_hash(crystal.text)[:16] if stype is SemanticType.SKILL else None
    async with store.transaction() as db:
        cursor = await db.execute(
            "UPDATE crystals SET semantic_type = ?, type_confidence = ?, epistemic_layer = ?, "
            "stable_skill_id = coalesce(stable_skill_id, ?), skill_version = coalesce(skill_version, ?), "
            "updated_at_ms = ? WHERE id = ? AND type_source = ?",
            (
                stype.value, guess.confidence,
                layer_for(crystal.text, stype, crystal.origin, crystal.speaker).value, skill_id,
                1 if skill_id else None, now, crystal_id, TypeSource.MODEL.value,
            ),
        )  # fmt: skip
        if cursor.rowcount == 0:
            return None  # corrected or retyped meanwhile: that decision stands
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'retyped', ?, ?)",
            (crystal_id, ACTOR, now, f"{crystal.semantic_type.value} -> {stype.value} (by its words and meaning)"),
        )
    return stype
