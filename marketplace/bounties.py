"""Bounties: signed requests for a skill, matched against listings and local skills.

A bounty matches a skill when they share a non-empty category, or a tag, or enough
of the bounty's words: its significant words (4+ letters, not common words) that the
skill's title, description, tags or text contain must number at least two (or all of
them, when the bounty has fewer than two). Deliberately plain: a user can see why a
listing matched, and a seller cannot game it with embeddings it controls.

Matching listings are shown first in `skills list` with the bounty beside them;
matches of a local skill count in its price (the demand factor).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from crypto.envelope import Envelope, decode_envelope
from marketplace.listings import ListingRow, listing_rows
from memory.store import MemoryStore
from p2p.messages import SkillBounty, parse_skill_listing

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]{3,}")
_COMMON = frozenset({
    "that", "this", "with", "from", "have", "what", "when", "where", "which", "while", "will", "would",
    "should", "could", "into", "onto", "about", "after", "before", "them", "then", "than", "there", "their",
    "these", "those", "your", "yours", "need", "needs", "want", "wants", "some", "more", "most", "very",
    "just", "also", "skill", "skills", "how-to", "using", "make", "does", "done",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class BountyRow:
    author: str  # hex public key
    bounty_id: str
    description: str
    tags: tuple[str, ...]
    category: str
    reward_micro_usdc: int
    expires_ms: int

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


def significant_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


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


async def record_bounty(store: MemoryStore, bounty: SkillBounty, envelope: Envelope) -> None:
    """Keep a bounty (its author may re-issue it with a new reward or expiry under the same id)."""
    async with store.transaction() as db:
        await db.execute(
            "INSERT INTO bounties (author, bounty_id, description, tags, category, reward_micro_usdc, expires_ms, "
            "received_ms, envelope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (author, bounty_id) DO UPDATE SET description = excluded.description, "
            "tags = excluded.tags, category = excluded.category, reward_micro_usdc = excluded.reward_micro_usdc, "
            "expires_ms = excluded.expires_ms, received_ms = excluded.received_ms, envelope = excluded.envelope",
            (
                envelope.author.hex(), bounty.bounty_id, bounty.description, json.dumps(list(bounty.tags)),
                bounty.category, bounty.reward_micro_usdc, bounty.expires_ms, store.now_ms(), envelope.encode(),
            ),
        )  # fmt: skip


async def live_bounties(store: MemoryStore, now_ms: int, *, author: str | None = None) -> list[BountyRow]:
    """Bounties not yet expired, largest reward first (only ``author``'s when given)."""
    async with store.reader().execute(
        "SELECT author, bounty_id, description, tags, category, reward_micro_usdc, expires_ms FROM bounties "
        "WHERE expires_ms > ? AND (? IS NULL OR author = ?) ORDER BY reward_micro_usdc DESC, expires_ms",
        (now_ms, author, author),
    ) as cursor:
        return [
            BountyRow(r[0], r[1], r[2], tuple(json.loads(r[3])), r[4], int(r[5]), int(r[6]))
            for r in await cursor.fetchall()
        ]


async def purge_expired_bounties(store: MemoryStore, now_ms: int) -> int:
    async with store.transaction() as db:
        cursor = await db.execute("DELETE FROM bounties WHERE expires_ms <= ?", (now_ms,))
        count = int(cursor.rowcount)
        await cursor.close()
    return count


@dataclass(frozen=True, slots=True)
class MatchedListing:
    listing: ListingRow
    bounties: tuple[BountyRow, ...]


async def listings_by_bounty(store: MemoryStore, now_ms: int) -> list[MatchedListing]:
    """Live listings, those answering a live bounty first (largest total reward first), then newest."""
    bounties = await live_bounties(store, now_ms)
    out = []
    for row, envelope in await listing_rows(store):
        listing = parse_skill_listing(decode_envelope(envelope, max_bytes=1_000_000).body_map())
        text = f"{listing.title} {listing.description}"
        hits = tuple(
            b
            for b in bounties
            if b.author != row.seller and matches(b, text=text, tags=listing.tags, category=listing.category)
        )
        out.append(MatchedListing(row, hits))
    out.sort(key=lambda m: (-sum(b.reward_micro_usdc for b in m.bounties), -m.listing.received_ms))
    return out


async def bounty_matches_of(
    store: MemoryStore, *, text: str, tags: Iterable[str], category: str, now_ms: int, me: str | None
) -> list[BountyRow]:
    """Live bounties (not this node's own) that a local skill answers."""
    tag_list = list(tags)
    return [
        b
        for b in await live_bounties(store, now_ms)
        if b.author != me and matches(b, text=text, tags=tag_list, category=category)
    ]
