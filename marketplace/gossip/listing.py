"""Skill listings, the home of their gossip kind: a skill offered on the network, free (its text
travels with it) or for sale.

Here are the message (``SkillListing``, described once by ``LISTING``), when it is held back (during
network weather, from authors below trusted), what this node does with one (``consume_listing``:
keep it in the catalogue, bounded per seller and in total, and store a free skill's text in memory
through ``ingest_listing``) and how one is made from a local skill (``listing_of``). The market part
registers the kind with its consumer (``marketplace.gossip.kinds``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from crypto.envelope import Envelope
from ground.authority import Speaker
from ground.fields import ADDRESS, text
from ground.wire import Spec, Wire, digest, ident, optional_text, strings, whole, words
from marketplace.gossip.peer_content import alike, hold_reason, peer_source, standing_by_source
from marketplace.gossip.received_quota import enforce_bound
from marketplace.gossip.sink import MarketKind, MarketSink, log
from marketplace.gossip.skill_bytes import skill_hash
from memory.governance.peer_quota import Evicted, PeerContentQuota, Standing, enforce
from memory.governance.quarantine import was_rejected
from memory.intake.store import IntakeStore
from memory.model import Crystal, NewCrystal, Origin, Quarantine, Scope, SemanticType, SkillVersion, content_hash
from memory.storage.crystal_queries import deprecate_skill_versions, newest_skill_version
from p2p.errors import SchemaError
from p2p.kinds import Gate, GossipKind, Lane, Received, Refusal
from p2p.topics import SKILLS_TOPIC
from p2p.trust.book import TrustLevel
from p2p.verdicts import Reason

KIND_SKILL_LISTING = "skill.listing"
MAX_SKILL_CHARS = 32_000


@dataclass(frozen=True, slots=True)
class SkillListing:
    """A skill offered on the network: a new skill, or a new version of a known one."""

    stable_skill_id: str
    version: int
    content_hash: str
    title: str
    description: str
    tags: tuple[str, ...]
    category: str
    price_micro_usdc: int
    seller_address: str
    executions: int
    successes: int
    content: str | None  # the skill itself when it is shared freely; None for a paid listing
    seller_addrs: tuple[str, ...] = ()  # where the seller listens, for the buyer's direct stream


def _seller_address(doc: dict[str, Any], name: str) -> str:
    value = text(doc, name, 42, empty=True)
    if value and not ADDRESS.fullmatch(value):
        raise SchemaError(f"{name!r} must be an 0x-prefixed 20-byte hex address")
    return value


def _listing_holds_together(listing: SkillListing) -> None:
    if listing.successes > listing.executions:
        raise SchemaError("'successes' cannot exceed 'executions'")
    if listing.content is not None and skill_hash(listing.content) != listing.content_hash:
        raise SchemaError("'content' does not match 'content_hash'")


TAGS = strings(16, 32)
LISTING = Wire(
    SkillListing,
    {
        "stable_skill_id": ident(),
        "version": whole(1, 10**6),
        "content_hash": digest(),
        "title": words(200),
        "description": words(2_000, empty=True),
        "tags": TAGS,
        "category": words(64, empty=True),
        "price_micro_usdc": whole(0, 10**12),
        "seller_address": Spec(_seller_address),
        "executions": whole(0, 10**9),
        "successes": whole(0, 10**9),
        "content": optional_text(MAX_SKILL_CHARS),
        "seller_addrs": strings(8, 200, prefix="/", omitted=True),
    },
    _listing_holds_together,
)


def listing_of(
    crystal: Crystal,
    *,
    title: str | None,
    description: str | None,
    price_micro_usdc: int = 0,
    seller_address: str = "",
    executions: int = 0,
    successes: int = 0,
    with_content: bool,
    seller_addrs: tuple[str, ...] = (),
) -> SkillListing:
    """The listing of a local skill crystal: shared freely (``with_content``) or offered for sale."""
    skill = crystal.skill
    return SkillListing(
        stable_skill_id=skill.stable_skill_id if skill else crystal.content_hash[:16],
        version=skill.version if skill else 1,
        content_hash=skill_hash(crystal.text),  # its exact bytes (``skill_bytes``)
        title=title or crystal.text.splitlines()[0][:200],
        description=description or "",
        tags=skill.tags if skill else (),
        category=(skill.category or "") if skill else "",
        price_micro_usdc=price_micro_usdc,
        seller_address=seller_address,
        executions=executions,
        successes=successes,
        content=crystal.text if with_content else None,
        seller_addrs=seller_addrs,
    )


def admit_listing(gate: Gate, envelope: Envelope, message: Any, now_ms: int) -> Refusal | None:
    """During network weather, skills come only from trusted authors (this node's own are not ingestion)."""
    author = envelope.author
    if now_ms >= gate.halted_until_ms or author == gate.own_key:
        return None
    if gate.level_of(author) in (TrustLevel.TRUSTED, TrustLevel.VERIFIED):
        return None
    return Refusal(Reason.INGESTION_HALTED, "network weather: skills only from trusted peers")


LISTING_KIND = GossipKind(KIND_SKILL_LISTING, SKILLS_TOPIC, LISTING, Lane.LISTINGS, admit_listing)


async def record_listing(store: IntakeStore, listing: SkillListing, envelope: Envelope) -> bool:
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


class Ingested(StrEnum):
    CREATED = "created"
    DUPLICATE = "duplicate"  # the same text is already stored
    NOT_NEWER = "not_newer"  # a version at or below the one we have from this publisher
    LISTING_ONLY = "listing_only"  # a paid listing: no content to store
    REJECTED_BEFORE = "rejected_before"  # the person rejected this text from quarantine


@dataclass(frozen=True, slots=True)
class IngestResult:
    outcome: Ingested
    crystal_id: str | None = None
    deprecated: int = 0  # older versions marked deprecated
    held: Quarantine | None = None  # why it waits in quarantine, if it does
    evicted: Evicted = field(default_factory=Evicted)  # what the quotas deleted to make room


async def ingest_listing(
    store: IntakeStore,
    listing: SkillListing,
    author: bytes,
    *,
    author_has_standing: bool,
    quota: PeerContentQuota | None = None,
    standing: Standing = alike,
) -> IngestResult:
    """Store a listing's content from ``author``; within ``quota`` (default: ``PeerContentQuota()``),
    evicting by ``standing`` (default: every author alike, so oldest first)."""
    if listing.content is None:
        return IngestResult(Ingested.LISTING_ONLY)
    if await was_rejected(store, content_hash(listing.content)):
        return IngestResult(Ingested.REJECTED_BEFORE)
    held = hold_reason(
        "\n".join((listing.title, listing.description, listing.content)), author_has_standing=author_has_standing
    )
    source = peer_source(author)
    newest = await newest_skill_version(store, listing.stable_skill_id, source)
    if newest is not None and newest[1] >= listing.version:
        return IngestResult(Ingested.NOT_NEWER, newest[0])
    previous = newest[0] if newest is not None else None
    remembered = await store.remember(
        NewCrystal(
            listing.content,
            semantic_type=SemanticType.SKILL,
            origin=Origin.PEER,
            speaker=Speaker.PEER,
            scope=Scope.SHARED,
            source=source,
            skill=SkillVersion(
                stable_skill_id=listing.stable_skill_id,
                version=listing.version,
                previous_version_id=previous,
                tags=listing.tags,
                category=listing.category or None,
            ),
            parents=(previous,) if previous else (),
            actor=source,
            context=listing.title,
            quarantine=held,
        )
    )
    if not remembered.created:
        return IngestResult(Ingested.DUPLICATE, remembered.crystal.id)
    deprecated = await deprecate_skill_versions(store, listing.stable_skill_id, source, by=remembered.crystal.id)
    evicted = await enforce(store, quota or PeerContentQuota(), source, standing)
    return IngestResult(Ingested.CREATED, remembered.crystal.id, deprecated, held, evicted)


async def consume_listing(sink: MarketSink, received: Received) -> None:
    """An accepted listing: into the catalogue, and a free skill's text into memory (held for the
    person when its author has no standing here; refused outright from an untrusted one)."""
    message, author = received.message, received.author
    assert isinstance(message, SkillListing)
    store = sink.store()
    await record_listing(store, message, received.envelope)
    sink.evicted["listings"] += await enforce_bound(
        store, sink.listings_bound, author.hex(), sink.standing_of, sink.me_hex
    )
    level = sink.level_of(author)
    if level is TrustLevel.UNTRUSTED:
        log.info("p2p.skill_refused_untrusted", author=author.hex()[:16], skill=message.stable_skill_id)
        return
    result = await ingest_listing(
        store, message, author, author_has_standing=level in (TrustLevel.TRUSTED, TrustLevel.VERIFIED),
        quota=sink.content_quota, standing=standing_by_source(sink.standing_of),
    )  # fmt: skip
    if result.evicted.crystals:
        sink.evicted["crystals"] += result.evicted.crystals
        sink.evicted["bytes"] += result.evicted.bytes
    sink.ingested["skills"] += 1
    log.info(
        "p2p.skill_received",
        skill=message.stable_skill_id,
        version=message.version,
        outcome=result.outcome.value,
        crystal=result.crystal_id,
        held=result.held.reason if result.held else None,
    )


SPOKEN = MarketKind(LISTING_KIND, consume_listing)
