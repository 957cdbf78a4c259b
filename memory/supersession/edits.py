"""Editing a crystal's text with its history kept, as mem0's update and Letta's memory edits do:
the new text becomes a new crystal that supersedes the old one. The old text stays, outdated, in
history searches and ``memory show``; the new one names it as what it was derived from, and both
attribution chains say who edited what and when."""

from __future__ import annotations

from ground.authority import Speaker
from memory.errors import EditRefused
from memory.intake.store import IntakeStore
from memory.model import Crystal, Lifespan, NewCrystal, Origin, SemanticType, normalise_text
from memory.supersession.detect import supersede


async def edit_text(store: IntakeStore, crystal_id: str, text: str, *, actor: str, by_person: bool) -> Crystal:
    """Store ``text`` as the new version of ``crystal_id`` and return it; the old one is superseded.

    The new version keeps the old one's type, scope, importance, lifespan and source. It is the
    person's words (origin ``user_input``) when the person edits, else it keeps the old origin:
    whoever may edit a crystal decides here, not this function (the agent may not edit the person's).
    """
    old = await store.get(crystal_id)
    if old.superseded is not None:
        raise EditRefused(f"{crystal_id} is outdated (replaced by {old.superseded.by}): edit that one")
    if old.quarantined:
        raise EditRefused(f"{crystal_id} is held for review: approve or reject it first")
    if old.semantic_type is SemanticType.SKILL:
        raise EditRefused(f"{crystal_id} is a skill, which is versioned: `skills edit {crystal_id} --text ...`")
    if normalise_text(text) == normalise_text(old.text):
        raise EditRefused(f"the text of {crystal_id} is already that")
    ttl_ms = None
    if old.lifespan is Lifespan.TTL and old.expires_at_ms is not None:
        ttl_ms = max(1, old.expires_at_ms - store.now_ms())  # it still expires when the old one would have
    new = NewCrystal(
        text,
        semantic_type=old.semantic_type,
        type_source=old.type_source,
        type_confidence=old.type_confidence,
        origin=Origin.USER_INPUT if by_person else old.origin,
        source=old.source,
        source_path=old.source_path,
        importance=old.importance,
        importance_floor=min(old.importance_floor, old.importance),
        scope=old.scope,
        lifespan=old.lifespan if ttl_ms is not None or old.lifespan is not Lifespan.TTL else Lifespan.DECAY,
        ttl_ms=ttl_ms,
        parents=(old.id,),
        actor=actor,
        speaker=Speaker.PERSON if by_person else old.speaker,
    )
    stored = await store.remember(new)
    await supersede(store, old.id, stored.crystal.id, reason="edited", actor=actor)
    return await store.get(stored.crystal.id)
