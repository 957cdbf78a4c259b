"""Mapping between crystals and rows of the ``crystals`` table: the one place that knows both."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ground.authority import Speaker
from memory.model import (
    Bounty,
    Crystal,
    EpistemicLayer,
    Hormones,
    Lifecycle,
    Lifespan,
    NewCrystal,
    Origin,
    Scope,
    SemanticType,
    Sensitivity,
    SkillVersion,
    Superseded,
    TypeSource,
    Verification,
    speaker_of,
)
from memory.storage.store_types import Admitted, Readmitted
from memory.when import time_window

COLUMNS = (
    "id, text, content_hash, semantic_type, origin, created_at_ms, stored_at_ms, updated_at_ms, source_path, source, "
    "line_start, line_end, importance, access_count, last_access_ms, emotional_valence, dopamine, cortisol, oxytocin, "
    "curiosity_boost, dream_count, last_dream_ms, steering_reward, epistemic_layer, is_verified, verified_by, "
    "bounty_id, bounty_reward, stable_skill_id, skill_version, previous_version_id, deprecated, deprecated_by, tags, "
    "category, lifecycle, scope, sensitivity, lifespan, expires_at_ms, embedded_with, context, quarantined, "
    "type_confidence, type_source, importance_floor, superseded_by, superseded_ms, refers_from_ms, refers_until_ms, "
    "speaker, voice"
)
SELECT_COLUMNS = ", ".join(f"c.{name.strip()}" for name in COLUMNS.split(","))

INSERT_COLUMNS = (
    "id", "text", "content_hash", "semantic_type", "origin", "created_at_ms", "stored_at_ms", "updated_at_ms",
    "source_path", "source", "line_start", "line_end", "importance", "emotional_valence", "dopamine", "cortisol",
    "oxytocin", "curiosity_boost", "steering_reward", "epistemic_layer", "is_verified", "verified_by", "bounty_id",
    "bounty_reward", "stable_skill_id", "skill_version", "previous_version_id", "deprecated", "deprecated_by", "tags",
    "category", "lifecycle", "scope", "sensitivity", "lifespan", "expires_at_ms", "context", "quarantined",
    "text_bytes", "type_confidence", "type_source", "importance_floor", "refers_from_ms", "refers_until_ms", "speaker",
    "voice",
)  # fmt: skip
# Positional parameters: binding a tuple is much cheaper than looking up 36 names in a dict per row.
INSERT_SQL = f"INSERT INTO crystals ({', '.join(INSERT_COLUMNS)}) VALUES ({', '.join('?' * len(INSERT_COLUMNS))})"


def new_crystal_id(now_ms: int) -> str:
    """Time-ordered and unguessable: 12 hex digits of milliseconds, 16 of randomness."""
    return f"{now_ms:012x}{secrets.token_hex(8)}"


def _bounty_and_skill(bounty: Bounty | None, skill: SkillVersion | None, tags: tuple[str, ...]) -> tuple[Any, ...]:
    """The bounty's and the skill version's columns, from ``bounty_id`` to ``category``; a skill's
    tags are its version's, any other crystal's its own."""
    return (
        bounty.bounty_id if bounty else None, bounty.reward_micro_usdc if bounty else None,
        skill.stable_skill_id if skill else None, skill.version if skill else None,
        skill.previous_version_id if skill else None, int(skill.deprecated) if skill else 0,
        skill.deprecated_by if skill else None, " ".join(skill.tags if skill else tags),
        skill.category if skill else None,
    )  # fmt: skip


def insert_params(row: Admitted, *, crystal_id: str, now_ms: int) -> tuple[Any, ...]:
    """The INSERT's parameters, in ``INSERT_COLUMNS`` order: the type, layer and sensitivity the
    intake decided; the hormones and valence its ``influence``, else the crystal's own."""
    new, typing, sensitivity, content_hash = row.new, row.typing, row.sensitivity, row.content_hash
    hormones, valence = row.influence or (new.hormones, new.emotional_valence)
    skill, bounty = typing.skill, new.bounty
    created = new.created_at_ms if new.created_at_ms is not None else now_ms
    refers = time_window(new.text, created)  # "yesterday" said on 8 May is 7 May
    return (
        crystal_id, new.text, content_hash, typing.semantic_type.value, new.origin.value, created, now_ms, now_ms,
        new.source_path, new.source, new.line_start, new.line_end, new.importance, valence,
        hormones.dopamine, hormones.cortisol, hormones.oxytocin, new.curiosity_boost, new.steering_reward,
        typing.layer.value, int(new.verification.is_verified), new.verification.verified_by,
        *_bounty_and_skill(bounty, skill, new.tags), Lifecycle.GENERATED.value, new.scope.value, sensitivity.value,
        new.lifespan.value, now_ms + new.ttl_ms if new.ttl_ms is not None else None, new.context,
        int(new.quarantine is not None), len(new.text.encode()), typing.confidence, typing.source.value,
        new.importance_floor, refers.start_ms if refers else None, refers.end_ms if refers else None,
        speaker_of(new).value, new.voice,
    )  # fmt: skip


# Every column a crystal has, for putting back a crystal read from an export (``memory.transfer``):
# its own times, counts, lifecycle and supersession, but no vector (``embedded_with`` stays NULL).
RESTORE_COLUMNS = (*(name.strip() for name in COLUMNS.split(",") if name.strip() != "embedded_with"), "text_bytes")
RESTORE_SQL = f"INSERT INTO crystals ({', '.join(RESTORE_COLUMNS)}) VALUES ({', '.join('?' * len(RESTORE_COLUMNS))})"


def restore_params(row: Readmitted) -> tuple[Any, ...]:
    """The INSERT's parameters for the readmitted crystal as it is, in ``RESTORE_COLUMNS`` order."""
    c = row.crystal
    skill, bounty, hormones = c.skill, c.bounty, c.hormones
    return (
        c.id, c.text, c.content_hash, c.semantic_type.value, c.origin.value, c.created_at_ms, c.stored_at_ms,
        c.updated_at_ms, c.source_path, c.source, c.line_start, c.line_end, c.importance, c.access_count,
        c.last_access_ms, c.emotional_valence, hormones.dopamine, hormones.cortisol, hormones.oxytocin,
        c.curiosity_boost, c.dream_count, c.last_dream_ms, c.steering_reward, c.epistemic_layer.value,
        int(c.verification.is_verified), c.verification.verified_by,
        *_bounty_and_skill(bounty, skill, c.tags), c.lifecycle.value, c.scope.value, c.sensitivity.value,
        c.lifespan.value,
        c.expires_at_ms, c.context, int(c.quarantined), c.type_confidence, c.type_source.value, c.importance_floor,
        c.superseded.by if c.superseded else None, c.superseded.at_ms if c.superseded else None,
        c.refers_to[0] if c.refers_to else None, c.refers_to[1] if c.refers_to else None, c.speaker.value, c.voice,
        len(c.text.encode()),
    )  # fmt: skip


def crystal_from_row(row: Sequence[Any]) -> Crystal:
    (cid, text, chash, stype, origin, created, stored, updated, spath, source, lstart, lend, importance, access,
     last_access, valence, dopamine, cortisol, oxytocin, curiosity, dream_count, last_dream, steering, layer,
     verified, verified_by, bounty_id, bounty_reward, skill_id, skill_version, prev_id, deprecated, deprecated_by,
     tags, category, lifecycle, scope, sensitivity, lifespan, expires, embedded_with, context, quarantined,
     type_confidence, type_source, importance_floor, superseded_by, superseded_ms, refers_from, refers_until,
     speaker, voice) = row  # fmt: skip
    return Crystal(
        id=cid,
        text=text,
        content_hash=chash,
        semantic_type=SemanticType(stype),
        origin=Origin(origin),
        created_at_ms=created,
        stored_at_ms=stored,
        updated_at_ms=updated,
        source_path=spath,
        source=source,
        line_start=lstart,
        line_end=lend,
        importance=importance,
        importance_floor=importance_floor,
        access_count=access,
        last_access_ms=last_access,
        emotional_valence=valence,
        hormones=Hormones(dopamine, cortisol, oxytocin),
        curiosity_boost=curiosity,
        dream_count=dream_count,
        last_dream_ms=last_dream,
        steering_reward=steering,
        epistemic_layer=EpistemicLayer(layer),
        type_confidence=type_confidence,
        type_source=TypeSource(type_source),
        verification=Verification(bool(verified), verified_by),
        bounty=Bounty(bounty_id, bounty_reward) if bounty_id is not None else None,
        skill=SkillVersion(
            stable_skill_id=skill_id,
            version=skill_version or 1,
            previous_version_id=prev_id,
            deprecated=bool(deprecated),
            deprecated_by=deprecated_by,
            tags=tuple(tags.split()) if tags else (),
            category=category,
        )
        if skill_id is not None
        else None,
        lifecycle=Lifecycle(lifecycle),
        scope=Scope(scope),
        sensitivity=Sensitivity(sensitivity),
        lifespan=Lifespan(lifespan),
        expires_at_ms=expires,
        embedded_with=embedded_with,
        context=context,
        quarantined=bool(quarantined),
        superseded=Superseded(superseded_by, superseded_ms) if superseded_by is not None else None,
        refers_to=(refers_from, refers_until) if refers_from is not None else None,
        tags=tuple(tags.split()) if tags else (),
        speaker=Speaker(speaker),
        voice=voice,
    )


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    items: Sequence[NewCrystal]
    hashes: list[str]
    params: list[tuple[Any, ...]]
    now_ms: int


def prepare_batch(rows: Sequence[Admitted], now_ms: int) -> PreparedBatch:
    """Lay out a batch of admitted rows for one INSERT each, with fresh ids."""
    return PreparedBatch(
        [r.new for r in rows],
        [r.content_hash for r in rows],
        [insert_params(r, crystal_id=new_crystal_id(now_ms), now_ms=now_ms) for r in rows],
        now_ms,
    )
