"""Skill listings seen on the network (and this node's own): the newest version per seller and skill.

The signed envelope of each listing is kept, so a buyer can later prove what was offered.
A revocation marks every listing of the skill by that seller; an older version never
replaces a newer one.
"""

from __future__ import annotations

from dataclasses import dataclass

from crypto.envelope import Envelope
from memory.storage.crystal_queries import mark_verified
from memory.storage.store import MemoryStore
from p2p.messages import SkillEndorsement, SkillListing, SkillRevocation


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


async def record_listing(store: MemoryStore, listing: SkillListing, envelope: Envelope) -> bool:
    """Keep ``listing`` if it is new, of a newer version, or of the same version signed later (a new
    price or address, or listed again after a revocation); True when it was kept."""
    async with store.transaction() as db:
        cursor = await db.execute(
            "INSERT INTO listings (seller, stable_skill_id, version, content_hash, title, category, price_micro_usdc, "
            "seller_address, executions, successes, revoked, received_ms, envelope, signed_ms) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) "
            "ON CONFLICT (seller, stable_skill_id) DO UPDATE SET version = excluded.version, "
            "content_hash = excluded.content_hash, title = excluded.title, category = excluded.category, "
            "price_micro_usdc = excluded.price_micro_usdc, seller_address = excluded.seller_address, "
            "executions = excluded.executions, successes = excluded.successes, revoked = 0, "
            "received_ms = excluded.received_ms, envelope = excluded.envelope, signed_ms = excluded.signed_ms "
            "WHERE excluded.version > listings.version "
            "OR (excluded.version = listings.version AND excluded.signed_ms > listings.signed_ms)",
            (
                envelope.author.hex(), listing.stable_skill_id, listing.version, listing.content_hash, listing.title,
                listing.category, listing.price_micro_usdc, listing.seller_address, listing.executions,
                listing.successes, store.now_ms(), envelope.encode(), envelope.ts_ms,
            ),
        )  # fmt: skip
        kept = cursor.rowcount > 0
        await cursor.close()
        if kept:
            key = (envelope.author.hex(), listing.stable_skill_id)
            await db.execute("DELETE FROM listings_fts WHERE seller = ? AND stable_skill_id = ?", key)
            await db.execute(
                "INSERT INTO listings_fts (seller, stable_skill_id, text, tags, category) VALUES (?, ?, ?, ?, ?)",
                (*key, f"{listing.title} {listing.description}", "\n".join(listing.tags), listing.category),
            )
    return kept


async def revoke_listing(store: MemoryStore, revocation: SkillRevocation) -> int:
    async with store.transaction() as db:
        cursor = await db.execute(
            "UPDATE listings SET revoked = 1 WHERE seller = ? AND stable_skill_id = ?",
            (revocation.publisher.hex(), revocation.stable_skill_id),
        )
        count = int(cursor.rowcount)
        await cursor.close()
    return count


async def live_listings(store: MemoryStore) -> list[ListingRow]:
    """Every live listing, newest first, without its envelope (the table is bounded:
    ``marketplace.catalog.received_quota``)."""
    async with store.reader().execute(
        f"SELECT {_COLUMNS} FROM listings WHERE revoked = 0 ORDER BY received_ms DESC, rowid DESC"  # noqa: S608
    ) as cursor:
        return [
            ListingRow(
                r[0], r[1], int(r[2]), r[3], r[4], r[5], int(r[6]), r[7], int(r[8]), int(r[9]), bool(r[10]), int(r[11])
            )
            for r in await cursor.fetchall()
        ]  # fmt: skip


async def record_endorsement(store: MemoryStore, endorsement: SkillEndorsement, envelope: Envelope) -> None:
    """Keep a management key's endorsement (its newest per seller and skill); crystals holding the
    endorsed content are marked verified by that key."""
    async with store.transaction() as db:
        await db.execute(
            "INSERT INTO endorsements (seller, stable_skill_id, endorser, version, content_hash, received_ms, "
            "envelope) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seller, stable_skill_id, endorser) DO UPDATE SET "
            "version = excluded.version, content_hash = excluded.content_hash, received_ms = excluded.received_ms, "
            "envelope = excluded.envelope WHERE excluded.version >= endorsements.version",
            (
                endorsement.seller.hex(), endorsement.stable_skill_id, envelope.author.hex(), endorsement.version,
                endorsement.content_hash, store.now_ms(), envelope.encode(),
            ),
        )  # fmt: skip
    # After the endorsement is written: a crash between the two leaves the crystal to be marked
    # when the endorsement comes again (marking is idempotent).
    await mark_verified(store, endorsement.content_hash, by=envelope.author.hex())


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
