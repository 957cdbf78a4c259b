"""A skill's tags and fields: ``clean_tags`` and ``skill_of``, plain functions over plain data.
Editing a local skill (tags, category, a new version, freezing) is ``memory.supersession.skill_edits``."""

from __future__ import annotations

from memory.errors import InvalidValue
from memory.model import (
    KNOWLEDGE_TYPES,
    SemanticType,
    SkillVersion,
    content_hash,
)

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
