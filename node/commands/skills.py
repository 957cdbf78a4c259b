"""The daemon's skill-market commands over the network: share, publish, list, revoke, bounties,
endorsements. They run inside the P2P part (they gossip through its host, read its trust levels)."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Protocol

from crypto.envelope import decode_envelope
from crypto.peer_id import ed25519_from_peer_id, peer_id_from_ed25519
from marketplace.bounties import record_bounty
from marketplace.catalog import bounties_page, listings_page
from marketplace.listings import endorsers_of, listing_envelope, record_endorsement, record_listing, revoke_listing
from marketplace.offer import price_of
from marketplace.pricing import parse_usdc
from marketplace.reputation import reputation_in
from marketplace.wallet import load_or_create_wallet
from memory.governance.rules import check_exportable
from memory.model import KNOWLEDGE_TYPES
from node.commands.skills_service import price_report, price_settings, record_report
from node.runtime.actor import current_actor
from node.servers.control import Handler
from p2p.messages import (
    KIND_BOUNTY,
    KIND_SKILL_ENDORSEMENT,
    KIND_SKILL_LISTING,
    KIND_SKILL_REVOCATION,
    MAX_BOUNTY_S,
    SkillBounty,
    SkillEndorsement,
    SkillRevocation,
    bounty_body,
    listing_of,
    parse_bounty,
    parse_skill_listing,
    skill_endorsement_body,
    skill_listing_body,
    skill_revocation_body,
)
from p2p.topics import BOUNTIES_TOPIC, SKILLS_TOPIC

if TYPE_CHECKING:
    from crypto.anchors import TrustAnchors
    from crypto.envelope import Envelope
    from memory.storage.store import MemoryStore
    from node.runtime.context import NodeContext
    from p2p.host import P2PHost
    from p2p.trust import TrustBook, TrustLevel


class SkillsHost(Protocol):
    """What the skills commands need of the part that gossips (``node.parts.p2p.P2PPart``)."""

    host: P2PHost | None
    trust: TrustBook

    @property
    def anchors(self) -> TrustAnchors: ...

    def store(self) -> MemoryStore: ...

    def level_of_key(self, key: bytes) -> TrustLevel: ...

    async def publish(self, topic: str, kind: str, body: dict[str, Any], *, now_ms: int | None = None) -> Envelope: ...


def _optional_text(value: Any) -> str | None:
    return str(value) if value else None


class SkillsCommands:
    def __init__(self, p2p: SkillsHost, ctx: NodeContext) -> None:
        self._p2p = p2p
        self._ctx = ctx

    def commands(self) -> dict[str, Handler]:
        return {
            "skills.share": self.share,
            "skills.revoke": self.revoke,
            "skills.publish": self.publish,
            "skills.list": self.list_offers,
            "skills.endorse": self.endorse,
            "skills.record": self.record,
            "skills.price": self.price,
            "bounties.post": self.post_bounty,
            "bounties.list": self.list_bounties,
        }

    async def share(self, args: dict[str, Any]) -> dict[str, Any]:
        """Gossip a local skill with its content, free to every node."""
        store = self._p2p.store()
        crystal = await store.get(str(args["crystal_id"]))
        if crystal.semantic_type not in KNOWLEDGE_TYPES:
            raise ValueError(f"only skills and task patterns are shared; this is a {crystal.semantic_type}")
        check_exportable(crystal, self._ctx.now_ms())
        listing = listing_of(
            crystal,
            title=_optional_text(args.get("title")),
            description=_optional_text(args.get("description")),
            with_content=True,
        )
        await self._p2p.publish(SKILLS_TOPIC, KIND_SKILL_LISTING, skill_listing_body(listing))
        return {"stable_skill_id": listing.stable_skill_id, "version": listing.version,
                "content_hash": listing.content_hash}  # fmt: skip

    async def publish(self, args: dict[str, Any]) -> dict[str, Any]:
        """List a proven skill for sale: quality gate, price, signed listing (no content) on the skills topic."""
        store = self._p2p.store()
        crystal = await store.get(str(args["crystal_id"]))
        me = self._ctx.identity.public_key
        _, breakdown, stats, reasons = await price_of(
            store, crystal, price_settings(self._ctx.config.marketplace),
            reputation_milli=reputation_in(self._p2p.trust), me=me.hex(),
        )  # fmt: skip
        if reasons:
            raise ValueError("not listable: " + "; ".join(reasons))
        wallet = load_or_create_wallet(self._ctx.paths.data_dir / "wallet.key")
        listing = listing_of(
            crystal,
            title=_optional_text(args.get("title")),
            description=_optional_text(args.get("description")),
            price_micro_usdc=breakdown.price_micro_usdc,
            seller_address=wallet.address,
            executions=stats.executions,
            successes=stats.successes,
            with_content=False,
            seller_addrs=tuple(self._p2p.host.dialable_addrs()) if self._p2p.host else (),
        )
        envelope = await self._p2p.publish(SKILLS_TOPIC, KIND_SKILL_LISTING, skill_listing_body(listing))
        await record_listing(store, listing, envelope)
        return {
            "stable_skill_id": listing.stable_skill_id,
            "version": listing.version,
            "price_micro_usdc": listing.price_micro_usdc,
            "seller_address": wallet.address,
        }

    async def record(self, args: dict[str, Any]) -> dict[str, Any]:
        """Record one execution of a local skill by the agent: ``{crystal_id, success, reward}``."""
        success = args.get("success")
        if not isinstance(success, bool):
            raise ValueError("'success' must be true or false")
        reward = args.get("reward", 1.0 if success else 0.0)
        if isinstance(reward, bool) or not isinstance(reward, int | float) or not 0 <= reward <= 1:
            raise ValueError("'reward' must be a number in [0, 1]")
        return await record_report(
            self._p2p.store(), str(args["crystal_id"]), success=success, reward_milli=round(reward * 1000),
            actor=current_actor(),
        )  # fmt: skip

    async def price(self, args: dict[str, Any]) -> dict[str, Any]:
        """The price this node would ask for a local skill, every factor, and whether it may be listed."""
        return await price_report(
            self._p2p.store(), str(args["crystal_id"]), price_settings(self._ctx.config.marketplace),
            reputation_milli=reputation_in(self._p2p.trust), me=self._ctx.identity.public_key.hex(),
        )  # fmt: skip

    async def list_offers(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """What the network offers, a page at a time (``marketplace.catalog``): by the seller's trust here,
        then relevance (to ``query``, or to this node's own bounties), then newest; each with the seller's
        trust level, the bounties it answers, and whether a management key endorsed exactly this version."""
        store = self._p2p.store()
        anchors = self._p2p.anchors
        page = await listings_page(
            store, standing=self._p2p.trust.standing_of, me=self._ctx.identity.public_key.hex(),
            now_ms=self._ctx.now_ms(),
            query=str(args.get("query") or ""), limit=int(args.get("limit") or 50), offset=int(args.get("offset") or 0),
        )  # fmt: skip
        rows = []
        for entry in page.items:
            row = entry.listing
            seller = bytes.fromhex(row.seller)
            endorsed_by = [
                key
                for key in await endorsers_of(store, row.seller, row.stable_skill_id, row.content_hash)
                if anchors.is_management(bytes.fromhex(key))
            ]
            rows.append(
                {
                    **asdict(row),
                    "seller_peer_id": peer_id_from_ed25519(seller),
                    "seller_level": self._p2p.level_of_key(seller).value,
                    "verified": bool(endorsed_by) or anchors.is_management(seller),
                    "endorsed_by": endorsed_by,
                    "bounties": [b.as_dict() for b in entry.bounties],
                    "mine": seller == self._ctx.identity.public_key,
                }
            )
        return rows

    async def revoke(self, args: dict[str, Any]) -> dict[str, Any]:
        revocation = SkillRevocation(
            str(args["stable_skill_id"]), self._ctx.identity.public_key, str(args.get("reason") or "revoked")
        )
        await self._p2p.publish(SKILLS_TOPIC, KIND_SKILL_REVOCATION, skill_revocation_body(revocation))
        await revoke_listing(self._p2p.store(), revocation)
        return {"stable_skill_id": revocation.stable_skill_id}

    async def endorse(self, args: dict[str, Any]) -> dict[str, Any]:
        """A management node vouches for the listed version of a seller's skill (``SELLER_PEER_ID/SKILL_ID``)."""
        me = self._ctx.identity.public_key
        if not self._p2p.anchors.is_management(me):
            raise ValueError(
                "endorsements count only from management keys, and this node's key is not in [trust] management_keys"
            )
        seller_peer, _, skill_id = str(args["listing"]).partition("/")
        seller = ed25519_from_peer_id(seller_peer)
        if seller is None or not skill_id:
            raise ValueError("name the listing as SELLER_PEER_ID/SKILL_ID (see `bitterbot-node skills list`)")
        store = self._p2p.store()
        wire = await listing_envelope(store, seller.hex(), skill_id)
        if wire is None:
            raise LookupError(f"no live listing of {skill_id} from {seller_peer} seen here")
        listing = parse_skill_listing(decode_envelope(wire, max_bytes=1_000_000).body_map())
        endorsement = SkillEndorsement(seller, skill_id, listing.version, listing.content_hash)
        envelope = await self._p2p.publish(SKILLS_TOPIC, KIND_SKILL_ENDORSEMENT, skill_endorsement_body(endorsement))
        await record_endorsement(store, endorsement, envelope)
        return {"stable_skill_id": skill_id, "version": listing.version, "content_hash": listing.content_hash}

    async def post_bounty(self, args: dict[str, Any]) -> dict[str, Any]:
        """Gossip a signed bounty: what skill is wanted and the USDC reward offered."""
        days = float(args.get("days") or 7)
        if not 0 < days * 86_400 <= MAX_BOUNTY_S:
            raise ValueError(f"a bounty lasts more than 0 and at most {MAX_BOUNTY_S // 86_400} days")
        now = self._ctx.now_ms()
        bounty = SkillBounty(
            bounty_id=str(args.get("bounty_id") or os.urandom(8).hex()),
            description=str(args["description"]),
            tags=tuple(str(t) for t in args.get("tags") or ()),
            category=str(args.get("category") or ""),
            reward_micro_usdc=parse_usdc(str(args["reward"])),
            expires_ms=now + int(days * 86_400_000),
        )
        parse_bounty(bounty_body(bounty))  # the same schema peers apply: refuse here what they would refuse
        envelope = await self._p2p.publish(BOUNTIES_TOPIC, KIND_BOUNTY, bounty_body(bounty), now_ms=now)
        await record_bounty(self._p2p.store(), bounty, envelope)
        return {"bounty_id": bounty.bounty_id, "reward_micro_usdc": bounty.reward_micro_usdc,
                "expires_ms": bounty.expires_ms}  # fmt: skip

    async def list_bounties(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """Live bounties, a page at a time: by the author's trust here, then reward; with how many listings
        answer each."""
        page = await bounties_page(
            self._p2p.store(), standing=self._p2p.trust.standing_of, now_ms=self._ctx.now_ms(),
            limit=int(args.get("limit") or 50), offset=int(args.get("offset") or 0),
        )  # fmt: skip
        me = self._ctx.identity.public_key.hex()
        return [
            {
                **b.as_dict(),
                "author_peer_id": peer_id_from_ed25519(bytes.fromhex(b.author)),
                "mine": b.author == me,
                "matching_listings": answering,
            }
            for b, answering in page.items
        ]
