"""The bodies of the envelopes that travel on our gossip topics, and their schemas.

Each body is a msgpack map inside a signed envelope (``crypto.envelope``). ``parse_*``
turns an untrusted map into a typed message or raises ``SchemaError`` naming the
field; ``*_body`` builds the map a sender signs. Numbers that are fractions travel
as integers in thousandths (``level_milli``) so that a body has one encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ground.fields import ADDRESS, content_hash_field, field, identifier, integer, only, text
from memory.model import Crystal, content_hash
from p2p.errors import SchemaError

KIND_SKILL_LISTING = "skill.listing"
KIND_SKILL_REVOCATION = "skill.revocation"
KIND_WEATHER = "weather"
KIND_TRUST_ATTESTATION = "trust.attestation"
KIND_SKILL_ENDORSEMENT = "skill.endorsement"
KIND_BOUNTY = "bounty"

MAX_SKILL_CHARS = 32_000
MAX_ATTESTED_PEERS = 256


def _tags(doc: dict[str, Any]) -> list[str]:
    tags = field(doc, "tags", list)
    if len(tags) > 16 or not all(isinstance(t, str) and 0 < len(t) <= 32 for t in tags):
        raise SchemaError("'tags' must be at most 16 strings of 1-32 characters")
    return [str(t) for t in tags]


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


_LISTING_FIELDS = {
    "stable_skill_id", "version", "content_hash", "title", "description", "tags", "category",
    "price_micro_usdc", "seller_address", "executions", "successes", "content", "seller_addrs",
}  # fmt: skip


def parse_skill_listing(doc: dict[str, Any]) -> SkillListing:
    only(doc, _LISTING_FIELDS)
    skill_id = identifier(doc, "stable_skill_id")
    chash = content_hash_field(doc)
    tags = _tags(doc)
    address = text(doc, "seller_address", 42, empty=True)
    if address and not ADDRESS.fullmatch(address):
        raise SchemaError("'seller_address' must be an 0x-prefixed 20-byte hex address")
    executions = integer(doc, "executions", 0, 10**9)
    successes = integer(doc, "successes", 0, 10**9)
    if successes > executions:
        raise SchemaError("'successes' cannot exceed 'executions'")
    content = field(doc, "content", str, optional=True)
    if content is not None:
        if not content.strip() or len(content) > MAX_SKILL_CHARS:
            raise SchemaError(f"'content' must be 1-{MAX_SKILL_CHARS} characters")
        if content_hash(content) != chash:
            raise SchemaError("'content' does not match 'content_hash'")
    addrs = field(doc, "seller_addrs", list, optional=True) or []
    if len(addrs) > 8 or not all(isinstance(a, str) and a.startswith("/") and len(a) <= 200 for a in addrs):
        raise SchemaError("'seller_addrs' must be at most 8 multiaddrs of at most 200 characters")
    return SkillListing(
        seller_addrs=tuple(addrs),
        stable_skill_id=skill_id,
        version=integer(doc, "version", 1, 10**6),
        content_hash=chash,
        title=text(doc, "title", 200),
        description=text(doc, "description", 2_000, empty=True),
        tags=tuple(tags),
        category=text(doc, "category", 64, empty=True),
        price_micro_usdc=integer(doc, "price_micro_usdc", 0, 10**12),
        seller_address=address,
        executions=executions,
        successes=successes,
        content=content,
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
        content_hash=crystal.content_hash,
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


def skill_listing_body(listing: SkillListing) -> dict[str, Any]:
    body: dict[str, Any] = {
        "stable_skill_id": listing.stable_skill_id,
        "version": listing.version,
        "content_hash": listing.content_hash,
        "title": listing.title,
        "description": listing.description,
        "tags": list(listing.tags),
        "category": listing.category,
        "price_micro_usdc": listing.price_micro_usdc,
        "seller_address": listing.seller_address,
        "executions": listing.executions,
        "successes": listing.successes,
    }
    if listing.content is not None:
        body["content"] = listing.content
    if listing.seller_addrs:
        body["seller_addrs"] = list(listing.seller_addrs)
    return body


@dataclass(frozen=True, slots=True)
class SkillRevocation:
    stable_skill_id: str
    publisher: bytes  # the original author's public key (a management key may revoke for it)
    reason: str


def parse_skill_revocation(doc: dict[str, Any]) -> SkillRevocation:
    only(doc, {"stable_skill_id", "publisher", "reason"})
    skill_id = identifier(doc, "stable_skill_id")
    publisher = field(doc, "publisher", bytes)
    if len(publisher) != 32:
        raise SchemaError("'publisher' must be a 32-byte public key")
    return SkillRevocation(skill_id, bytes(publisher), text(doc, "reason", 280))


def skill_revocation_body(revocation: SkillRevocation) -> dict[str, Any]:
    return {
        "stable_skill_id": revocation.stable_skill_id,
        "publisher": revocation.publisher,
        "reason": revocation.reason,
    }


MAX_WEATHER_S = 7 * 86_400


@dataclass(frozen=True, slots=True)
class Weather:
    """A network cortisol override, signed by a management key."""

    level_milli: int  # 0..1000: cortisol 0.0..1.0
    duration_s: int
    reason: str
    issued_ms: int  # equals the envelope's timestamp
    seq: int  # per management key, strictly increasing

    @property
    def level(self) -> float:
        return self.level_milli / 1000

    @property
    def until_ms(self) -> int:
        return self.issued_ms + self.duration_s * 1000


def parse_weather(doc: dict[str, Any]) -> Weather:
    only(doc, {"level_milli", "duration_s", "reason", "issued_ms", "seq"})
    return Weather(
        level_milli=integer(doc, "level_milli", 0, 1000),
        duration_s=integer(doc, "duration_s", 1, MAX_WEATHER_S),
        reason=text(doc, "reason", 280),
        issued_ms=integer(doc, "issued_ms", 0, 2**62),
        seq=integer(doc, "seq", 1, 2**62),
    )


def weather_body(weather: Weather) -> dict[str, Any]:
    return {
        "level_milli": weather.level_milli,
        "duration_s": weather.duration_s,
        "reason": weather.reason,
        "issued_ms": weather.issued_ms,
        "seq": weather.seq,
    }


@dataclass(frozen=True, slots=True)
class TrustAttestation:
    """A node's local trust in the peers it has dealt with, for EigenTrust."""

    ratings: tuple[tuple[bytes, int], ...]  # (peer public key, local trust in thousandths)


def parse_trust_attestation(doc: dict[str, Any]) -> TrustAttestation:
    only(doc, {"ratings"})
    ratings = field(doc, "ratings", list)
    if len(ratings) > MAX_ATTESTED_PEERS:
        raise SchemaError(f"'ratings' holds at most {MAX_ATTESTED_PEERS} peers")
    parsed: list[tuple[bytes, int]] = []
    seen: set[bytes] = set()
    for entry in ratings:
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not isinstance(entry[0], bytes)
            or len(entry[0]) != 32
            or type(entry[1]) is not int
            or not 0 <= entry[1] <= 1000
        ):
            raise SchemaError("each rating is [32-byte public key, 0..1000]")
        if entry[0] in seen:
            raise SchemaError("a peer is rated twice")
        seen.add(entry[0])
        parsed.append((bytes(entry[0]), int(entry[1])))
    return TrustAttestation(tuple(parsed))


def trust_attestation_body(attestation: TrustAttestation) -> dict[str, Any]:
    return {"ratings": [[key, milli] for key, milli in attestation.ratings]}


@dataclass(frozen=True, slots=True)
class SkillEndorsement:
    """A management key vouches for one version of a seller's skill (its content hash): "verified"."""

    seller: bytes
    stable_skill_id: str
    version: int
    content_hash: str


def parse_skill_endorsement(doc: dict[str, Any]) -> SkillEndorsement:
    only(doc, {"seller", "stable_skill_id", "version", "content_hash"})
    seller = field(doc, "seller", bytes)
    if len(seller) != 32:
        raise SchemaError("'seller' must be a 32-byte public key")
    skill_id = identifier(doc, "stable_skill_id")
    chash = content_hash_field(doc)
    return SkillEndorsement(bytes(seller), skill_id, integer(doc, "version", 1, 10**6), chash)


def skill_endorsement_body(endorsement: SkillEndorsement) -> dict[str, Any]:
    return {
        "seller": endorsement.seller,
        "stable_skill_id": endorsement.stable_skill_id,
        "version": endorsement.version,
        "content_hash": endorsement.content_hash,
    }


MAX_BOUNTY_S = 30 * 86_400


@dataclass(frozen=True, slots=True)
class SkillBounty:
    """A signed request for a skill: what is wanted, and the reward offered for it."""

    bounty_id: str
    description: str
    tags: tuple[str, ...]
    category: str
    reward_micro_usdc: int
    expires_ms: int


def parse_bounty(doc: dict[str, Any]) -> SkillBounty:
    only(doc, {"bounty_id", "description", "tags", "category", "reward_micro_usdc", "expires_ms"})
    bounty_id = identifier(doc, "bounty_id")
    tags = _tags(doc)
    return SkillBounty(
        bounty_id=bounty_id,
        description=text(doc, "description", 2_000),
        tags=tuple(tags),
        category=text(doc, "category", 64, empty=True),
        reward_micro_usdc=integer(doc, "reward_micro_usdc", 1, 10**12),
        expires_ms=integer(doc, "expires_ms", 0, 2**62),
    )


def bounty_body(bounty: SkillBounty) -> dict[str, Any]:
    return {
        "bounty_id": bounty.bounty_id,
        "description": bounty.description,
        "tags": list(bounty.tags),
        "category": bounty.category,
        "reward_micro_usdc": bounty.reward_micro_usdc,
        "expires_ms": bounty.expires_ms,
    }
