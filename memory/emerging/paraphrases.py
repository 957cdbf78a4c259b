"""Paraphrases of one skill are versions of it, never each other's supersession.

A practice written down again in other words ("I renew the cert with certbot renew", "these days
it is certbot renew and a reload") is the same skill said again, not a correction: supersession
(``memory.supersession``) leaves knowledge crystals among themselves alone, and here, when a
skill or task pattern of this node's own is embedded, it joins the nearest one of its own that is
the same task (cosine at least ``patterns.SIMILAR``, the emerging-skill grouping's own measure)
as that skill's next version: the same stable skill id, the version after the family's latest,
and that latest as its previous version. Nothing is deprecated or hidden: a paraphrase is not an
improvement, so every wording stays current and counts as a practice (``memory.emerging``);
``skills edit --text`` is what makes a new version that deprecates the old one.

A crystal that is already a later version of something (``skills edit``) keeps its family, and
what another node sent is never joined to this node's skills.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.emerging.patterns import SIMILAR
from memory.model import HIDDEN_LIFECYCLES, KNOWLEDGE_TYPES, Crystal, Origin
from memory.storage.store import MemoryStore

ACTOR = "paraphrase"


def own_practice(crystal: Crystal) -> bool:
    """A skill or task pattern of this node's own, live and released: what may join a family."""
    return (
        crystal.semantic_type in KNOWLEDGE_TYPES
        and crystal.origin is not Origin.PEER
        and not crystal.quarantined
        and crystal.lifecycle not in HIDDEN_LIFECYCLES
    )


async def join_as_version(store: MemoryStore, crystal_id: str, neighbours: Sequence[tuple[int, float]]) -> str | None:
    """Make ``crystal_id`` the next version of the skill it paraphrases, if any: its nearest own
    practice among ``neighbours`` ((rowid, cosine), from ``memory.graph.links.nearest``) at ``SIMILAR`` or
    more. Returns the stable skill id it joined, or None."""
    new = await store.get(crystal_id)
    if not own_practice(new) or (new.skill is not None and new.skill.previous_version_id is not None):
        return None
    crystals = await store.get_many_by_rowid([rowid for rowid, _ in neighbours])
    alike = [
        (similarity, other)
        for rowid, similarity in neighbours
        if similarity >= SIMILAR and (other := crystals.get(rowid)) is not None
        and other.id != new.id and own_practice(other)
    ]  # fmt: skip
    if not alike:
        return None
    _, nearest = max(alike, key=lambda pair: pair[0])
    family = nearest.skill.stable_skill_id if nearest.skill else nearest.content_hash[:16]
    now = store.now_ms()
    async with store.transaction() as db:
        await db.execute(
            "UPDATE crystals SET stable_skill_id = ?, skill_version = coalesce(skill_version, 1) WHERE id = ?",
            (family, nearest.id),
        )
        async with db.execute(
            "SELECT id, skill_version FROM crystals WHERE stable_skill_id = ? AND id != ? "
            "ORDER BY skill_version DESC, created_at_ms DESC LIMIT 1",
            (family, new.id),
        ) as cursor:
            latest = await cursor.fetchone()
        assert latest is not None  # the nearest one is in the family now
        await db.execute(
            "UPDATE crystals SET stable_skill_id = ?, skill_version = ?, previous_version_id = ?, updated_at_ms = ? "
            "WHERE id = ?",
            (family, int(latest[1]) + 1, str(latest[0]), now, new.id),
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'versioned', ?, ?)",
            (new.id, ACTOR, now, f"a paraphrase of {nearest.id}: version {int(latest[1]) + 1} of {family}"),
        )
    return family
