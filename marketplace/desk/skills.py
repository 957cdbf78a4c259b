"""The skill commands' work on the network (``node.commands.skills``): sign and gossip listings,
revocations, endorsements and bounties, and page through what peers offer and ask for.

Each method takes its command's request as the handler got it (the ``...Request`` protocols name
what is read of it) and, where the authority table asks who is speaking, the ``Speaker`` and actor
the handler resolved: this package never guesses who called.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope
from crypto.identity import Identity
from crypto.peer_id import ed25519_from_peer_id, peer_id_from_ed25519
from ground.authority import Speaker
from ground.clock import Clock
from marketplace.catalog.browse import bounties_page, listings_page
from marketplace.catalog.listings import endorsers_of
from marketplace.chain_types import Account
from marketplace.desk.lookup import stored_listing
from marketplace.desk.offer import price_of
from marketplace.desk.reputation import reputation_in
from marketplace.errors import InvalidValue, ListingNotFound, NotListable
from marketplace.gossip.bounty import BOUNTY, BOUNTY_KIND, MAX_BOUNTY_S, SkillBounty, record_bounty
from marketplace.gossip.endorsement import ENDORSEMENT_KIND, SkillEndorsement, record_endorsement
from marketplace.gossip.listing import LISTING_KIND, listing_of, record_listing
from marketplace.gossip.revocation import REVOCATION_KIND, SkillRevocation, revoke_listing
from marketplace.pricing import PriceSettings, parse_usdc
from marketplace.quality import refusals
from memory.governance.rules import check_exportable
from memory.governance.scope import change_scope
from memory.intake.store import IntakeStore
from memory.model import KNOWLEDGE_TYPES, Scope
from p2p.host import P2PHost
from p2p.kinds import GossipKind
from p2p.trust.book import TrustBook, TrustLevel


class Network(Protocol):
    """What the skill commands need of the network (``node.parts.p2p.P2PPart``)."""

    host: P2PHost | None
    trust: TrustBook

    @property
    def anchors(self) -> TrustAnchors: ...

    def level_of_key(self, key: bytes) -> TrustLevel: ...

    async def publish(self, kind: GossipKind[Any], message: Any, *, now_ms: int | None = None) -> Envelope: ...


class ShareRequest(Protocol):
    crystal_id: str
    title: str | None
    description: str | None


class PageRequest(Protocol):
    limit: int
    offset: int


class ListingsRequest(PageRequest, Protocol):
    query: str


class RevokeRequest(Protocol):
    stable_skill_id: str
    reason: str


class EndorseRequest(Protocol):
    listing: str


class BountyRequest(Protocol):
    description: str
    reward: str
    tags: list[str]
    category: str
    days: float
    bounty_id: str | None


class SkillDesk:
    """Listing, revoking, endorsing and asking for skills on the network, as this node."""

    def __init__(
        self,
        network: Network,
        store: Callable[[], IntakeStore],
        identity: Identity,
        wallet: Account,
        prices: PriceSettings,
        clock: Clock,
    ) -> None:
        self._network = network
        self._store = store
        self._identity = identity
        self._wallet = wallet
        self._prices = prices
        self._now_ms = clock

    async def share(self, request: ShareRequest) -> dict[str, Any]:
        """Share a skill free (signed, gossiped)."""
        crystal = await self._store().get(request.crystal_id)
        if crystal.semantic_type not in KNOWLEDGE_TYPES:
            raise InvalidValue(f"only skills and task patterns are shared; this is a {crystal.semantic_type}")
        check_exportable(crystal, self._now_ms())
        listing = listing_of(crystal, title=request.title or None, description=request.description or None,
                             with_content=True)  # fmt: skip
        await self._network.publish(LISTING_KIND, listing)
        return {"stable_skill_id": listing.stable_skill_id, "version": listing.version,
                "content_hash": listing.content_hash}  # fmt: skip

    async def publish(self, request: ShareRequest, *, speaker: Speaker, actor: str) -> dict[str, Any]:
        """List a proven skill for sale.

        Quality gate, then the scope change (private -> public, the person's alone: ``change_scope``
        asks the authority table for ``speaker``), price, and a signed listing (no content) on the
        skills topic. A skill the gate refuses keeps its scope."""
        store = self._store()
        crystal = await store.get(request.crystal_id)
        _, breakdown, stats, _ = await price_of(
            store, crystal, self._prices, reputation_milli=reputation_in(self._network.trust),
            me=self._identity.public_key.hex(),
        )  # fmt: skip
        if reasons := refusals(crystal, stats, publishing=True):
            raise NotListable(crystal.id, reasons)
        if crystal.scope is Scope.PRIVATE:
            crystal = await change_scope(
                store, crystal.id, Scope.PUBLIC, speaker=speaker, actor=actor, reason="for sale"
            )
        host = self._network.host
        listing = listing_of(
            crystal,
            title=request.title or None,
            description=request.description or None,
            price_micro_usdc=breakdown.price_micro_usdc,
            seller_address=self._wallet.address,
            executions=stats.executions,
            successes=stats.successes,
            with_content=False,
            seller_addrs=tuple(host.dialable_addrs()) if host else (),
        )
        envelope = await self._network.publish(LISTING_KIND, listing)
        await record_listing(store, listing, envelope)
        return {
            "stable_skill_id": listing.stable_skill_id,
            "version": listing.version,
            "price_micro_usdc": listing.price_micro_usdc,
            "seller_address": self._wallet.address,
        }

    async def list_offers(self, request: ListingsRequest) -> list[dict[str, Any]]:
        """What the network offers, a page at a time, ordered by ``marketplace.catalog.browse``: the
        seller's trust here, then relevance (to ``query``, or to this node's own bounties), then newest;
        each with the seller's trust level, the bounties it answers, and whether a management key
        endorsed exactly this version."""
        store, network, me = self._store(), self._network, self._identity.public_key
        page = await listings_page(
            store, standing=network.trust.standing_of, me=me.hex(), now_ms=self._now_ms(),
            query=request.query, limit=request.limit, offset=request.offset,
        )  # fmt: skip
        rows = []
        for entry in page.items:
            row = entry.listing
            seller = bytes.fromhex(row.seller)
            endorsed_by = [
                key
                for key in await endorsers_of(store, row.seller, row.stable_skill_id, row.content_hash)
                if network.anchors.is_management(bytes.fromhex(key))
            ]
            rows.append(
                {
                    **asdict(row),
                    "seller_peer_id": peer_id_from_ed25519(seller),
                    "seller_level": network.level_of_key(seller).value,
                    "verified": bool(endorsed_by) or network.anchors.is_management(seller),
                    "endorsed_by": endorsed_by,
                    "bounties": [b.as_dict() for b in entry.bounties],
                    "mine": seller == me,
                }
            )
        return rows

    async def revoke(self, request: RevokeRequest) -> dict[str, Any]:
        """Revoke a skill this node published: every node marks it deprecated."""
        revocation = SkillRevocation(request.stable_skill_id, self._identity.public_key, request.reason or "revoked")
        await self._network.publish(REVOCATION_KIND, revocation)
        await revoke_listing(self._store(), revocation)
        return {"stable_skill_id": revocation.stable_skill_id}

    async def endorse(self, request: EndorseRequest) -> dict[str, Any]:
        """Vouch, as a management node, for the listed version of a seller's skill
        (``SELLER_PEER_ID/SKILL_ID``)."""
        if not self._network.anchors.is_management(self._identity.public_key):
            raise InvalidValue(
                "endorsements count only from management keys, and this node's key is not in [trust] management_keys"
            )
        seller_peer, _, skill_id = request.listing.partition("/")
        seller = ed25519_from_peer_id(seller_peer)
        if seller is None or not skill_id:
            raise InvalidValue("name the listing as SELLER_PEER_ID/SKILL_ID (see `bitterbot-node skills list`)")
        store = self._store()
        listing = await stored_listing(store, seller.hex(), skill_id)
        if listing is None:
            raise ListingNotFound(f"no live listing of {skill_id} from {seller_peer} seen here")
        endorsement = SkillEndorsement(seller, skill_id, listing.version, listing.content_hash)
        envelope = await self._network.publish(ENDORSEMENT_KIND, endorsement)
        await record_endorsement(store, endorsement, envelope)
        return {"stable_skill_id": skill_id, "version": listing.version, "content_hash": listing.content_hash}

    async def post_bounty(self, request: BountyRequest) -> dict[str, Any]:
        """Ask the network for a skill: gossip a signed bounty, what is wanted and the USDC offered."""
        days = request.days
        if not 0 < days * 86_400 <= MAX_BOUNTY_S:
            raise InvalidValue(f"a bounty lasts more than 0 and at most {MAX_BOUNTY_S // 86_400} days")
        now = self._now_ms()
        bounty = SkillBounty(
            bounty_id=request.bounty_id or os.urandom(8).hex(),
            description=request.description,
            tags=tuple(request.tags),
            category=request.category,
            reward_micro_usdc=parse_usdc(request.reward),
            expires_ms=now + int(days * 86_400_000),
        )
        BOUNTY.parse(BOUNTY.body(bounty))  # the same schema peers apply: refuse here what they would refuse
        envelope = await self._network.publish(BOUNTY_KIND, bounty, now_ms=now)
        await record_bounty(self._store(), bounty, envelope)
        return {"bounty_id": bounty.bounty_id, "reward_micro_usdc": bounty.reward_micro_usdc,
                "expires_ms": bounty.expires_ms}  # fmt: skip

    async def list_bounties(self, request: PageRequest) -> list[dict[str, Any]]:
        """Live bounties, a page at a time: by the author's trust here, then reward; with how many
        listings answer each."""
        page = await bounties_page(
            self._store(), standing=self._network.trust.standing_of, now_ms=self._now_ms(),
            limit=request.limit, offset=request.offset,
        )  # fmt: skip
        me = self._identity.public_key.hex()
        return [
            {**b.as_dict(), "author_peer_id": peer_id_from_ed25519(bytes.fromhex(b.author)), "mine": b.author == me,
             "matching_listings": answering}
            for b, answering in page.items
        ]  # fmt: skip
