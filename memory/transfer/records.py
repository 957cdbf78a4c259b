"""The export format, as pure functions: a crystal, a link and a derivation as JSON objects, and back.

A file is JSONL. Its first line is a header (``{"format": "bitterbot-memory", "version": 3, …}``);
each later line has a ``kind``: ``crystal`` (every field of ``memory.model.Crystal`` plus its
attribution ``history``), ``link`` (a typed ``Association``) or ``derived`` (a provenance edge). Version 1
files, written before the header existed, hold bare crystal objects and are read as crystals. Version 3
adds the node's signature: the header names the signer, a last ``signature`` line signs the rest
(``memory.transfer.signature``); version 1 and 2 files read as unsigned.

Everything read back is checked as if hostile: a field of the wrong type or out of range makes that
line a ``DamagedRecord`` naming the field; the content hash is recomputed from the text, never trusted.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, TypeVar

from ground.authority import Speaker
from memory.errors import InvalidValue
from memory.graph.provenance import Association, Attribution
from memory.model import (
    MAX_CONTEXT_CHARS,
    MAX_TEXT_CHARS,
    AssociationType,
    Bounty,
    Crystal,
    EpistemicLayer,
    Hormones,
    Lifecycle,
    Lifespan,
    Origin,
    Scope,
    SemanticType,
    Sensitivity,
    SkillVersion,
    Superseded,
    TypeSource,
    Verification,
    content_hash,
)

E = TypeVar("E", bound=Enum)
FORMAT = "bitterbot-memory"
VERSION = 3
_ID = re.compile(r"^[0-9A-Za-z_.:-]{1,128}$")
_SHORT = 1_000  # a source, a path, an actor, a relation: anything but the text and its context
MAX_HISTORY = 1_000  # attribution entries restored per crystal


class DamagedRecord(InvalidValue):
    """One line of an export file that cannot be restored; the message names the field."""


class NewerFormat(InvalidValue):
    """The file was written by a newer release, in a format this one does not know."""


@dataclass(frozen=True, slots=True)
class Derivation:
    child: str
    parent: str
    relation: str


Record = tuple[Crystal, tuple[Attribution, ...]] | Association | Derivation


def header(now_ms: int, signer: bytes | None = None) -> dict[str, Any]:
    """The first line; ``signer``: the public key whose signature ends the file."""
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "exported_at_ms": now_ms}
    if signer is not None:
        doc["signer"] = signer.hex()
    return doc


def crystal_fields(crystal: Crystal) -> dict[str, Any]:
    """Every field of a crystal as plain JSON values (enums by their value)."""
    return {k: (v.value if isinstance(v, Enum) else v) for k, v in asdict(crystal).items()}


def crystal_record(crystal: Crystal, history: list[Attribution]) -> dict[str, Any]:
    return {"kind": "crystal", **crystal_fields(crystal), "history": [asdict(a) for a in history]}


def link_record(link: Association) -> dict[str, Any]:
    return {"kind": "link", **asdict(link), "type": link.type.value}


def derivation_record(derivation: Derivation) -> dict[str, Any]:
    return {"kind": "derived", **asdict(derivation)}


def is_header(doc: object) -> bool:
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def check_header(doc: dict[str, Any]) -> None:
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DamagedRecord("the header has no valid version")
    if version > VERSION:
        raise NewerFormat(f"written by a newer bitterbot-node (format version {version}; this one reads {VERSION})")


def looks_like_crystal(doc: object) -> bool:
    """A version 1 line: a bare crystal object, as ``memory export`` wrote before the header."""
    return isinstance(doc, dict) and {"id", "text", "semantic_type", "origin", "lifecycle"} <= doc.keys()


def parse_record(doc: object) -> Record:
    """A line of an export file (after the header) as what it restores; raises ``DamagedRecord``."""
    if not isinstance(doc, dict):
        raise DamagedRecord("not a JSON object")
    kind = doc.get("kind", "crystal" if looks_like_crystal(doc) else None)
    if kind == "crystal":
        return _crystal(doc), _history(doc.get("history", []))
    if kind == "link":
        return Association(
            _id(doc, "src_id"),
            _id(doc, "dst_id"),
            _enum(doc, "type", AssociationType),
            _unit(doc, "weight"),
            _ms(doc, "created_ms"),
        )
    if kind == "derived":
        return Derivation(_id(doc, "child"), _id(doc, "parent"), _short(doc, "relation"))
    raise DamagedRecord(f"unknown kind {kind!r}" if kind is not None else "no kind")


def _crystal(doc: dict[str, Any]) -> Crystal:
    text = doc.get("text")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT_CHARS:
        raise DamagedRecord(f"text must be a non-empty string of at most {MAX_TEXT_CHARS} characters")
    context = _optional(doc, "context", str)
    if context is not None and len(context) > MAX_CONTEXT_CHARS:
        raise DamagedRecord(f"context is over {MAX_CONTEXT_CHARS} characters")
    try:
        return Crystal(
            id=_id(doc, "id"),
            text=text,
            content_hash=content_hash(text),
            semantic_type=_enum(doc, "semantic_type", SemanticType),
            origin=_enum(doc, "origin", Origin),
            created_at_ms=_ms(doc, "created_at_ms"),
            stored_at_ms=_ms(doc, "stored_at_ms"),
            updated_at_ms=_ms(doc, "updated_at_ms"),
            source_path=_optional_short(doc, "source_path"),
            source=_optional_short(doc, "source"),
            line_start=_optional(doc, "line_start", int),
            line_end=_optional(doc, "line_end", int),
            importance=_unit(doc, "importance"),
            importance_floor=_unit(doc, "importance_floor", 0.0),
            access_count=_count(doc, "access_count"),
            last_access_ms=_optional(doc, "last_access_ms", int),
            emotional_valence=_number(doc, "emotional_valence", -1.0, 1.0, 0.0),
            hormones=Hormones(**_hormones(doc)),
            curiosity_boost=_number(doc, "curiosity_boost", -1e6, 1e6, 0.0),
            dream_count=_count(doc, "dream_count"),
            last_dream_ms=_optional(doc, "last_dream_ms", int),
            steering_reward=_number(doc, "steering_reward", -1e6, 1e6, 0.0),
            epistemic_layer=_enum(doc, "epistemic_layer", EpistemicLayer),
            type_confidence=_unit(doc, "type_confidence", 1.0),
            type_source=_enum(doc, "type_source", TypeSource, TypeSource.LEGACY),
            verification=_verification(doc.get("verification")),
            bounty=_bounty(doc.get("bounty")),
            skill=_skill(doc.get("skill")),
            lifecycle=_lifecycle(doc),
            scope=_enum(doc, "scope", Scope),
            sensitivity=_enum(doc, "sensitivity", Sensitivity),
            lifespan=_enum(doc, "lifespan", Lifespan),
            expires_at_ms=_optional(doc, "expires_at_ms", int),
            embedded_with=None,  # vectors are not exported: the importing node embeds with its own embedder
            context=context,
            quarantined=_optional(doc, "quarantined", bool) or False,
            superseded=_superseded(doc.get("superseded")),
            refers_to=_span(doc.get("refers_to")),
            tags=_words(doc.get("tags", []), "tags"),
            # Files written before speakers were recorded say nothing: the weakest, until vouched for.
            speaker=_enum(doc, "speaker", Speaker, Speaker.FILE),
            voice=_optional_short(doc, "voice"),
        )
    except InvalidValue as exc:  # Hormones' own range check
        raise DamagedRecord(str(exc)) from None


def _lifecycle(doc: dict[str, Any]) -> Lifecycle:
    lifecycle = _enum(doc, "lifecycle", Lifecycle)
    if lifecycle is Lifecycle.EXPIRED:
        raise DamagedRecord("an expired crystal is forgotten and is not restored")
    return lifecycle


def _history(value: object) -> tuple[Attribution, ...]:
    if not isinstance(value, list) or len(value) > MAX_HISTORY:
        raise DamagedRecord(f"history must be a list of at most {MAX_HISTORY} entries")
    entries = []
    for item in value:
        if not isinstance(item, dict):
            raise DamagedRecord("a history entry is not an object")
        entries.append(
            Attribution(
                _short(item, "actor"), _short(item, "action"), _ms(item, "ts_ms"), _optional_short(item, "detail")
            )
        )
    return tuple(entries)


def _hormones(doc: dict[str, Any]) -> dict[str, float]:
    value = doc.get("hormones") or {}
    if not isinstance(value, dict):
        raise DamagedRecord("hormones must be an object")
    return {name: _unit(value, name, 0.0) for name in ("dopamine", "cortisol", "oxytocin")}


def _verification(value: object) -> Verification:
    if value is None:
        return Verification()
    if not isinstance(value, dict):
        raise DamagedRecord("verification must be an object")
    return Verification(bool(_optional(value, "is_verified", bool)), _optional_short(value, "verified_by"))


def _bounty(value: object) -> Bounty | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DamagedRecord("bounty must be an object")
    return Bounty(_short(value, "bounty_id"), _count(value, "reward_micro_usdc"))


def _skill(value: object) -> SkillVersion | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DamagedRecord("skill must be an object")
    return SkillVersion(
        stable_skill_id=_short(value, "stable_skill_id"),
        version=max(1, _count(value, "version")),
        previous_version_id=_optional_short(value, "previous_version_id"),
        deprecated=bool(_optional(value, "deprecated", bool)),
        deprecated_by=_optional_short(value, "deprecated_by"),
        tags=_words(value.get("tags", []), "skill.tags"),
        category=_optional_short(value, "category"),
    )


def _words(value: object, name: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(t, str) and t and " " not in t for t in value):
        raise DamagedRecord(f"{name} must be a list of words")
    return tuple(value)


def _superseded(value: object) -> Superseded | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DamagedRecord("superseded must be an object")
    return Superseded(_id(value, "by"), _ms(value, "at_ms"))


def _span(value: object) -> tuple[int, int] | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(_is_int(v) for v in value) and value[0] <= value[1]):
        raise DamagedRecord("refers_to must be [from_ms, until_ms]")
    return int(value[0]), int(value[1])


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _id(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not _ID.match(value):
        raise DamagedRecord(f"{key} must be an id (letters, digits, _.:-, at most 128)")
    return value


def _short(doc: dict[str, Any], key: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value or len(value) > _SHORT:
        raise DamagedRecord(f"{key} must be a non-empty string of at most {_SHORT} characters")
    return value


def _optional_short(doc: dict[str, Any], key: str) -> str | None:
    return None if doc.get(key) is None else _short(doc, key)


def _optional(doc: dict[str, Any], key: str, kind: type[Any]) -> Any:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DamagedRecord(f"{key} must be a {kind.__name__}")
    return value


def _ms(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**53:
        raise DamagedRecord(f"{key} must be a time in milliseconds")
    return value


def _count(doc: dict[str, Any], key: str) -> int:
    value = doc.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63:
        raise DamagedRecord(f"{key} must be a whole number, 0 or more")
    return value


def _number(doc: dict[str, Any], key: str, low: float, high: float, default: float | None = None) -> float:
    value = doc.get(key, default)
    if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
        raise DamagedRecord(f"{key} must be a number in [{low:g}, {high:g}]")
    return float(value)


def _unit(doc: dict[str, Any], key: str, default: float | None = None) -> float:
    return _number(doc, key, 0.0, 1.0, default)


def _enum(doc: dict[str, Any], key: str, kind: type[E], default: E | None = None) -> E:
    value = doc.get(key)
    if value is None and default is not None:
        return default
    try:
        return kind(value)
    except ValueError:
        raise DamagedRecord(f"{key} must be one of {', '.join(str(m.value) for m in kind)}") from None
