"""Bounties: signed requests for a skill, matched against listings and local skills.

A bounty matches a skill when they share a non-empty category, or a tag, or enough
of the bounty's words: its significant words (4+ letters, not common words) that the
skill's title, description, tags or text contain must number at least two (or all of
them, when the bounty has fewer than two). Deliberately plain: a user can see why a
listing matched, and a seller cannot game it with embeddings it controls.

`skills list` shows the bounties each listing answers, and puts listings answering this
node's own bounties first among sellers trusted alike; matches of a local skill count in
its price (the demand factor). A skill crystallised, stored or bought here records the live bounty
with the largest reward it answers (``answered_bounty``: the seed's ``bountyMatchId``, with the boost
``memory.model.bounty_boost`` derives from its reward), and emerging skills that answer one are
listed first (``with_answered_bounties``). Bounties are indexed by their words (``bounties_fts``), so a
match reads only the bounties that share a word, tag or category with the skill.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from marketplace.catalog.words import any_of, significant_words
from marketplace.gossip.bounty import SkillBounty
from memory.emerging.patterns import EmergingSkill
from memory.model import Bounty
from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True, kw_only=True)
class BountyRow(SkillBounty):
    """A bounty as kept: the signed request and its author."""

    author: str  # hex public key

    def as_dict(self) -> dict[str, object]:
        return {
            "author": self.author,
            "bounty_id": self.bounty_id,
            "description": self.description,
            "tags": list(self.tags),
            "category": self.category,
            "reward_micro_usdc": self.reward_micro_usdc,
            "expires_ms": self.expires_ms,
        }


def matches(bounty: BountyRow, *, text: str, tags: Iterable[str], category: str) -> bool:
    """Whether a skill (its title/description/text, tags, category) answers ``bounty``."""
    if bounty.category and category and bounty.category.lower() == category.lower():
        return True
    skill_tags = {t.lower() for t in tags}
    if skill_tags & {t.lower() for t in bounty.tags}:
        return True
    wanted = significant_words(bounty.description)
    if not wanted:
        return False
    found = wanted & significant_words(" ".join([text, *skill_tags]))
    return len(found) >= min(2, len(wanted))


async def live_bounties(store: MemoryStore, now_ms: int, *, author: str | None = None) -> list[BountyRow]:
    """Bounties not yet expired, largest reward first (only ``author``'s when given)."""
    async with store.reader().execute(
        "SELECT author, bounty_id, description, tags, category, reward_micro_usdc, expires_ms FROM bounties "
        "WHERE expires_ms > ? AND (? IS NULL OR author = ?) ORDER BY reward_micro_usdc DESC, expires_ms",
        (now_ms, author, author),
    ) as cursor:
        return [_bounty(r) for r in await cursor.fetchall()]


def _bounty(r: Sequence[Any]) -> BountyRow:
    return BountyRow(str(r[1]), str(r[2]), tuple(json.loads(r[3])), str(r[4]), int(r[5]), int(r[6]), author=str(r[0]))


async def purge_expired_bounties(store: MemoryStore, now_ms: int) -> int:
    async with store.transaction() as db:
        cursor = await db.execute("DELETE FROM bounties WHERE expires_ms <= ?", (now_ms,))
        count = int(cursor.rowcount)
        await cursor.close()
    return count


def skill_terms(text: str, tags: Iterable[str], category: str) -> list[str]:
    """What a skill could answer a bounty by: any one makes the bounty a candidate for ``matches``
    (its category, a tag, or one of its significant words; a match needs at least one of them)."""
    tag_list = list(tags)
    return [*significant_words(" ".join([text, *tag_list])), *tag_list, category]


def bounty_terms(bounty: BountyRow) -> list[str]:
    """What a skill could match ``bounty`` by, the same way round."""
    return [*significant_words(bounty.description), *bounty.tags, bounty.category]


async def bounties_answered_by(
    store: MemoryStore, *, text: str, tags: Iterable[str], category: str, now_ms: int, me: str | None
) -> list[BountyRow]:
    """Live bounties (not this node's own) that a skill answers, largest reward first. Only the bounties
    sharing a word, tag or category with it are read (``bounties_fts``), then ``matches`` decides."""
    tag_list = list(tags)
    query = any_of(skill_terms(text, tag_list, category))
    if query is None:
        return []
    async with store.reader().execute(
        "SELECT b.author, b.bounty_id, b.description, b.tags, b.category, b.reward_micro_usdc, b.expires_ms "
        "FROM bounties b JOIN (SELECT DISTINCT author, bounty_id FROM bounties_fts WHERE bounties_fts MATCH ?) f "
        "ON b.author = f.author AND b.bounty_id = f.bounty_id "
        "WHERE b.expires_ms > ? ORDER BY b.reward_micro_usdc DESC, b.expires_ms",
        (query, now_ms),
    ) as cursor:
        rows = [_bounty(r) for r in await cursor.fetchall()]
    return [b for b in rows if b.author != me and matches(b, text=text, tags=tag_list, category=category)]


async def answered_bounty(
    store: MemoryStore, *, text: str, tags: Iterable[str], category: str, now_ms: int
) -> Bounty | None:
    """The live bounty with the largest reward that a skill answers (anyone's: a stranger's asks for
    it, this node's own asked for it), as its crystal records it; None when it answers none."""
    found = await bounties_answered_by(store, text=text, tags=tags, category=category, now_ms=now_ms, me=None)
    return Bounty(found[0].bounty_id, found[0].reward_micro_usdc) if found else None


async def with_answered_bounties(store: MemoryStore, skills: Sequence[EmergingSkill]) -> list[EmergingSkill]:
    """``skills``, each with the live bounty its most typical practice answers (by its text and tags)."""
    now = store.now_ms()
    out = []
    for skill in skills:
        typical = await store.get(skill.typical_id)
        bounty = await answered_bounty(store, text=typical.text, tags=typical.tags, category="", now_ms=now)
        out.append(replace(skill, bounty=bounty))
    return out
