"""Skills from peers into memory: accepted listings become crystals, newer versions deprecate
older ones, revocations deprecate what they name.

A crystal from a peer has origin ``peer``, ``source = "peer:<author key hex>"`` (so
versions and revocations are matched to their publisher only) and the attribution
``created`` by ``peer:<key>``. It is stored ``shared`` and goes through the same
governance as anything else (sensitivity is classified from its text).

It is held in quarantine (``memory.governance.quarantine``) when its author has no standing here
(below ``trusted``) or when its text reads like instructions to the agent
(``memory.governance.injection``), whoever sent it. A text the person rejected before is refused.
Each new crystal is followed by the peer content quotas (``memory.governance.peer_quota``): past
them, the least trusted authors' oldest crystals are deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from memory.governance.injection import instruction_flags
from memory.governance.peer_quota import Evicted, PeerContentQuota, Standing, enforce
from memory.governance.quarantine import was_rejected
from memory.model import NewCrystal, Origin, Quarantine, Scope, SemanticType, SkillVersion, content_hash
from memory.storage.crystal_queries import deprecate_skill_versions, newest_skill_version
from memory.storage.store import MemoryStore
from p2p.messages import SkillListing, SkillRevocation


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


def standing_by_source(standing_of_hex: Callable[[str], tuple[int, float]]) -> Standing:
    """A quota's ranking of sources (``peer:<key hex>``) from a ranking of hex keys (``TrustBook.standing_of``)."""

    def standing(source: str) -> tuple[int, float]:
        return standing_of_hex(source.removeprefix("peer:"))

    return standing


def _alike(source: str) -> tuple[int, float]:
    return (0, 0.0)


def hold_reason(text: str, *, author_has_standing: bool) -> Quarantine | None:
    """Why content from a peer must wait for the person, or None when the agent may see it."""
    flags = instruction_flags(text)
    if flags:
        return Quarantine(f"reads like instructions to the agent ({', '.join(flags)})", flags)
    if not author_has_standing:
        return Quarantine("its author is not trusted here yet")
    return None


def peer_source(author: bytes) -> str:
    return f"peer:{author.hex()}"


async def ingest_listing(
    store: MemoryStore,
    listing: SkillListing,
    author: bytes,
    *,
    author_has_standing: bool,
    quota: PeerContentQuota | None = None,
    standing: Standing = _alike,
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


async def apply_revocation(store: MemoryStore, revocation: SkillRevocation) -> int:
    """Deprecate every version of the skill from its publisher; returns how many crystals."""
    return await deprecate_skill_versions(
        store, revocation.stable_skill_id, peer_source(revocation.publisher), by="revoked"
    )
