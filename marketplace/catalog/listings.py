"""Skill listings seen on the network (and this node's own), as read back: the newest version per
seller and skill, their signed envelopes (a buyer can later prove what was offered) and endorsers.
They are written by their gossip kinds' homes (``marketplace.gossip.listing``, ``.revocation``,
``.endorsement``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True)
class ListingRow:
    seller: str
    stable_skill_id: str
    version: int
    content_hash: str
    title: str
    category: str
    price_micro_usdc: int
    seller_address: str
    executions: int
    successes: int
    revoked: bool
    received_ms: int


_COLUMNS = (
    "seller, stable_skill_id, version, content_hash, title, category, price_micro_usdc, seller_address, "
    "executions, successes, revoked, received_ms"
)


async def live_listings(store: MemoryStore) -> list[ListingRow]:
    """Every live listing, newest first, without its envelope (the table is bounded:
    ``marketplace.gossip.received_quota``)."""
    async with store.reader().execute(
        f"SELECT {_COLUMNS} FROM listings WHERE revoked = 0 ORDER BY received_ms DESC, rowid DESC"  # noqa: S608
    ) as cursor:
        return [
            ListingRow(
                r[0], r[1], int(r[2]), r[3], r[4], r[5], int(r[6]), r[7], int(r[8]), int(r[9]), bool(r[10]), int(r[11])
            )
            for r in await cursor.fetchall()
        ]  # fmt: skip


async def endorsers_of(store: MemoryStore, seller: str, stable_skill_id: str, content_hash: str) -> list[str]:
    """Hex keys that endorsed exactly this content of the seller's skill (a newer version needs its own)."""
    async with store.reader().execute(
        "SELECT endorser FROM endorsements WHERE seller = ? AND stable_skill_id = ? AND content_hash = ?",
        (seller, stable_skill_id, content_hash),
    ) as cursor:
        return [str(r[0]) for r in await cursor.fetchall()]


async def listings_in_category(store: MemoryStore, category: str, *, excluding_seller: str | None = None) -> int:
    """How many live listings of ``category`` this node has seen (scarcity in pricing)."""
    async with store.reader().execute(
        "SELECT count(*) FROM listings WHERE revoked = 0 AND category = ? AND seller IS NOT ?",
        (category, excluding_seller),
    ) as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def listing_envelope(store: MemoryStore, seller: str, stable_skill_id: str) -> bytes | None:
    async with store.reader().execute(
        "SELECT envelope FROM listings WHERE seller = ? AND stable_skill_id = ? AND revoked = 0",
        (seller, stable_skill_id),
    ) as cursor:
        row = await cursor.fetchone()
    return bytes(row[0]) if row else None


async def listed_title(store: MemoryStore, seller: str, stable_skill_id: str) -> str | None:
    """The title a seller listed a skill under (revoked listings too: a past deal still names it)."""
    async with store.reader().execute(
        "SELECT title FROM listings WHERE seller = ? AND stable_skill_id = ?", (seller, stable_skill_id)
    ) as cursor:
        row = await cursor.fetchone()
    return str(row[0]) if row else None


async def count_listed_by(store: MemoryStore, seller: str | None) -> int:
    """Live listings of one seller (hex key); 0 for None."""
    async with store.reader().execute(
        "SELECT count(*) FROM listings WHERE seller = ? AND revoked = 0", (seller,)
    ) as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0
