"""The bodies of the envelopes that travel on our gossip topics, and their schemas.

Each body is a msgpack map inside a signed envelope (``crypto.envelope``). Each message is
described once (``ground.wire.Wire``): its dataclass and its fields' checks, from which
``parse_*`` turns an untrusted map into the typed message (or raises ``FieldError`` /
``SchemaError`` naming the field) and ``*_body`` builds the map a sender signs. Numbers that
are fractions travel as integers in thousandths (``level_milli``) so that a body has one encoding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ground.fields import ADDRESS, field, text
from ground.wire import Spec, Wire, digest, ident, key, optional_text, strings, whole, words
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
    if listing.content is not None and content_hash(listing.content) != listing.content_hash:
        raise SchemaError("'content' does not match 'content_hash'")


_TAGS = strings(16, 32)
LISTING = Wire(
    SkillListing,
    {
        "stable_skill_id": ident(),
        "version": whole(1, 10**6),
        "content_hash": digest(),
        "title": words(200),
        "description": words(2_000, empty=True),
        "tags": _TAGS,
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
parse_skill_listing = LISTING.parse


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


skill_listing_body = LISTING.body


@dataclass(frozen=True, slots=True)
class SkillRevocation:
    stable_skill_id: str
    publisher: bytes  # the original author's public key (a management key may revoke for it)
    reason: str


REVOCATION = Wire(SkillRevocation, {"stable_skill_id": ident(), "publisher": key(), "reason": words(280)})
parse_skill_revocation = REVOCATION.parse
skill_revocation_body = REVOCATION.body


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


WEATHER = Wire(
    Weather,
    {
        "level_milli": whole(0, 1000),
        "duration_s": whole(1, MAX_WEATHER_S),
        "reason": words(280),
        "issued_ms": whole(0, 2**62),
        "seq": whole(1, 2**62),
    },
)
parse_weather = WEATHER.parse
weather_body = WEATHER.body


@dataclass(frozen=True, slots=True)
class TrustAttestation:
    """A node's local trust in the peers it has dealt with, for EigenTrust."""

    ratings: tuple[tuple[bytes, int], ...]  # (peer public key, local trust in thousandths)


def _ratings(doc: dict[str, Any], name: str) -> tuple[tuple[bytes, int], ...]:
    ratings = field(doc, name, list)
    if len(ratings) > MAX_ATTESTED_PEERS:
        raise SchemaError(f"{name!r} holds at most {MAX_ATTESTED_PEERS} peers")
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
    return tuple(parsed)


ATTESTATION = Wire(
    TrustAttestation, {"ratings": Spec(_ratings, lambda ratings: [[key, milli] for key, milli in ratings])}
)
parse_trust_attestation = ATTESTATION.parse
trust_attestation_body = ATTESTATION.body


@dataclass(frozen=True, slots=True)
class SkillEndorsement:
    """A management key vouches for one version of a seller's skill (its content hash): "verified"."""

    seller: bytes
    stable_skill_id: str
    version: int
    content_hash: str


ENDORSEMENT = Wire(
    SkillEndorsement,
    {"seller": key(), "stable_skill_id": ident(), "version": whole(1, 10**6), "content_hash": digest()},
)
parse_skill_endorsement = ENDORSEMENT.parse
skill_endorsement_body = ENDORSEMENT.body


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


BOUNTY = Wire(
    SkillBounty,
    {
        "bounty_id": ident(),
        "description": words(2_000),
        "tags": _TAGS,
        "category": words(64, empty=True),
        "reward_micro_usdc": whole(1, 10**12),
        "expires_ms": whole(0, 2**62),
    },
)
parse_bounty = BOUNTY.parse
bounty_body = BOUNTY.body
