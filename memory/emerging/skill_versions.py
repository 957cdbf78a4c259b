"""Editing a local skill: its tags and category in place, its text as a new version, freezing it.

A new version is a new crystal with the same stable skill id, the version number plus one and
the previous version's id; the previous one is deprecated (``deprecated_by`` names the new
crystal) and stays for provenance. A frozen skill is immutable: its tags, category and text do
not change in place (a new version is still a new crystal, as the design has it). Only this
node's own skills are edited: what a peer sent is its author's.
"""

from __future__ import annotations

from dataclasses import replace

from ground.authority import Speaker
from memory.errors import InvalidValue, StoreError
from memory.intake.store import IntakeStore
from memory.model import (
    KNOWLEDGE_TYPES,
    Crystal,
    Lifecycle,
    NewCrystal,
    Origin,
    SemanticType,
    SkillVersion,
    content_hash,
)
from memory.storage.row_writes import crystal_any
from memory.storage.store import MemoryStore

MAX_TAGS = 16
MAX_TAG_CHARS = 40


def clean_tags(tags: list[str]) -> tuple[str, ...]:
    """Lower-case, one word each (tags are space-separated in the row and indexed for search)."""
    out: list[str] = []
    for tag in tags:
        word = "-".join(tag.strip().lower().split())
        if not word:
            continue
        if len(word) > MAX_TAG_CHARS:
            raise InvalidValue(f"a tag is at most {MAX_TAG_CHARS} characters: {word[:20]}…")
        if word not in out:
            out.append(word)
    if len(out) > MAX_TAGS:
        raise InvalidValue(f"at most {MAX_TAGS} tags")
    return tuple(out)


async def _own_skill(store: MemoryStore, crystal_id: str) -> Crystal:
    crystal = await store.get(crystal_id)
    if crystal.semantic_type not in KNOWLEDGE_TYPES:
        raise InvalidValue(f"only skills and task patterns have versions and tags, not a {crystal.semantic_type}")
    if crystal.origin is Origin.PEER:
        raise InvalidValue("a skill another node sent is its author's: it is not edited here")
    return crystal


async def edit_skill(
    store: IntakeStore,
    crystal_id: str,
    *,
    tags: list[str] | None = None,
    category: str | None = None,
    text: str | None = None,
    actor: str,
    speaker: Speaker,
) -> Crystal:
    """Set tags and category, and with ``text`` make a new version, said by ``speaker`` (who wrote the
    new text); returns the current version."""
    crystal = await _own_skill(store, crystal_id)
    skill = crystal.skill or SkillVersion(stable_skill_id=crystal.content_hash[:16])
    new_tags = clean_tags(tags) if tags is not None else skill.tags
    new_category = (category.strip().lower() or None) if category is not None else skill.category
    if text is not None:
        version = replace(skill, tags=new_tags, category=new_category)
        return await _new_version(store, crystal, version, text, actor, speaker)
    if crystal.lifecycle is Lifecycle.FROZEN:
        raise StoreError(f"skill {crystal_id} is frozen: its tags and category stay as they are")
    now = store.now_ms()
    async with store.transaction() as db:
        await db.execute(
            "UPDATE crystals SET tags = ?, category = ?, stable_skill_id = coalesce(stable_skill_id, ?), "
            "skill_version = coalesce(skill_version, 1), updated_at_ms = ? WHERE id = ?",
            (" ".join(new_tags), new_category, skill.stable_skill_id, now, crystal_id),
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'edited', ?, ?)",
            (crystal_id, actor, now, f"tags {' '.join(new_tags) or '-'}; category {new_category or '-'}"),
        )
    return await crystal_any(store.reader(), crystal_id)


async def _new_version(
    store: IntakeStore, old: Crystal, skill: SkillVersion, text: str, actor: str, speaker: Speaker
) -> Crystal:
    if old.skill is not None and old.skill.deprecated:
        raise InvalidValue(f"{old.id} was replaced by {old.skill.deprecated_by}: edit the current version")
    version = SkillVersion(
        stable_skill_id=skill.stable_skill_id, version=skill.version + 1, previous_version_id=old.id,
        tags=skill.tags, category=skill.category,
    )  # fmt: skip
    new = NewCrystal(
        text, semantic_type=old.semantic_type, origin=old.origin, skill=version, scope=old.scope,
        parents=(old.id,), actor=actor, source=old.source, speaker=speaker,
    )  # fmt: skip
    made = await store.remember(new)
    if not made.created:
        raise InvalidValue(f"that text is already crystal {made.crystal.id}")
    now = store.now_ms()
    async with store.transaction() as db:
        await db.execute(
            "UPDATE crystals SET deprecated = 1, deprecated_by = ?, updated_at_ms = ? WHERE id = ?",
            (made.crystal.id, now, old.id),
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'versioned', ?, ?)",
            (old.id, actor, now, f"version {version.version} is {made.crystal.id}"),
        )
    return made.crystal


async def freeze(store: MemoryStore, crystal_id: str, *, actor: str) -> Crystal:
    """Make a skill immutable: it never decays, merges or changes in place."""
    crystal = await _own_skill(store, crystal_id)
    if crystal.lifecycle is Lifecycle.FROZEN:
        return crystal
    return await store.transition(crystal_id, Lifecycle.FROZEN, reason="frozen by the person", actor=actor)


def skill_of(
    text: str, semantic_type: SemanticType | None, tags: list[str] | None, category: str | None
) -> SkillVersion | None:
    """The skill fields of a new crystal from ``memory add --type skill --tags … --category …``."""
    if not tags and not category:
        return None
    if semantic_type not in KNOWLEDGE_TYPES:
        raise InvalidValue("tags and a category are for skills and task patterns: give --type skill")
    category_name = (category or "").strip().lower() or None
    return SkillVersion(stable_skill_id=content_hash(text)[:16], tags=clean_tags(tags or []), category=category_name)
