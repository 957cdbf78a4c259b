"""What the skill commands do on the network: sign and gossip listings, revocations, endorsements
and bounties through the P2P part, and page through what peers offer (``node.commands.skills``
declares the commands; this module is loaded only when one runs)."""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

from crypto.envelope import decode_envelope
from crypto.peer_id import ed25519_from_peer_id, peer_id_from_ed25519
from marketplace.catalog.browse import bounties_page, listings_page
from marketplace.catalog.listings import endorsers_of, listing_envelope
from marketplace.errors import NotListable
from marketplace.gossip.bounty import BOUNTY, BOUNTY_KIND, MAX_BOUNTY_S, SkillBounty, record_bounty
from marketplace.gossip.endorsement import ENDORSEMENT_KIND, SkillEndorsement, record_endorsement
from marketplace.gossip.listing import LISTING, LISTING_KIND, listing_of, record_listing
from marketplace.gossip.revocation import REVOCATION_KIND, SkillRevocation, revoke_listing
from marketplace.offer import price_of
from marketplace.pricing import parse_usdc
from marketplace.quality import refusals
from marketplace.reputation import reputation_in
from marketplace.wallet import load_or_create_wallet
from memory.governance.rules import check_exportable
from memory.governance.scope import change_scope
from memory.model import KNOWLEDGE_TYPES, Scope
from node.actor import current_actor, current_speaker
from node.commands.skills_requests import (
    BountyArgs,
    EndorseArgs,
    ListingsArgs,
    PageArgs,
    PublishArgs,
    RevokeArgs,
    ShareArgs,
    SkillsHost,
)
from node.errors import InvalidValue, NotFoundHere


async def share(p2p: SkillsHost, request: ShareArgs) -> dict[str, Any]:
    """Share a skill free (signed, gossiped)."""
    store = p2p.store()
    crystal = await store.get(request.crystal_id)
    if crystal.semantic_type not in KNOWLEDGE_TYPES:
        raise InvalidValue(f"only skills and task patterns are shared; this is a {crystal.semantic_type}")
    check_exportable(crystal, p2p.ctx.now_ms())
    listing = listing_of(
        crystal,
        title=request.title or None,
        description=request.description or None,
        with_content=True,
    )
    await p2p.publish(LISTING_KIND, listing)
    return {"stable_skill_id": listing.stable_skill_id, "version": listing.version,
            "content_hash": listing.content_hash}  # fmt: skip


async def publish(p2p: SkillsHost, request: PublishArgs) -> dict[str, Any]:
    """List a proven skill for sale.

    Quality gate, then the scope change (private -> public, the person's alone), price, and a
    signed listing (no content) on the skills topic. A skill the gate refuses keeps its scope."""
    store = p2p.store()
    crystal = await store.get(request.crystal_id)
    me = p2p.ctx.identity.public_key
    _, breakdown, stats, _ = await price_of(
        store, crystal, p2p.ctx.config.marketplace,
        reputation_milli=reputation_in(p2p.trust), me=me.hex(),
    )  # fmt: skip
    if reasons := refusals(crystal, stats, publishing=True):
        raise NotListable(crystal.id, reasons)
    if crystal.scope is Scope.PRIVATE:
        speaker, actor = current_speaker(), current_actor()
        crystal = await change_scope(store, crystal.id, Scope.PUBLIC, speaker=speaker, actor=actor, reason="for sale")
    wallet = load_or_create_wallet(p2p.ctx.paths.data_dir / "wallet.key", p2p.ctx.key_passphrase)
    listing = listing_of(
        crystal,
        title=request.title or None,
        description=request.description or None,
        price_micro_usdc=breakdown.price_micro_usdc,
        seller_address=wallet.address,
        executions=stats.executions,
        successes=stats.successes,
        with_content=False,
        seller_addrs=tuple(p2p.host.dialable_addrs()) if p2p.host else (),
    )
    envelope = await p2p.publish(LISTING_KIND, listing)
    await record_listing(store, listing, envelope)
    return {
        "stable_skill_id": listing.stable_skill_id,
        "version": listing.version,
        "price_micro_usdc": listing.price_micro_usdc,
        "seller_address": wallet.address,
    }


async def list_offers(p2p: SkillsHost, request: ListingsArgs) -> list[dict[str, Any]]:
    """What the network offers, a page at a time: by seller trust, then relevance.

    Ordered by ``marketplace.catalog.browse``: the seller's trust here, then relevance (to ``query``, or to
    this node's own bounties), then newest; each with the seller's trust level, the bounties it
    answers, and whether a management key endorsed exactly this version."""
    store = p2p.store()
    anchors = p2p.anchors
    page = await listings_page(
        store, standing=p2p.trust.standing_of, me=p2p.ctx.identity.public_key.hex(),
        now_ms=p2p.ctx.now_ms(),
        query=request.query, limit=request.limit, offset=request.offset,
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
                "seller_level": p2p.level_of_key(seller).value,
                "verified": bool(endorsed_by) or anchors.is_management(seller),
                "endorsed_by": endorsed_by,
                "bounties": [b.as_dict() for b in entry.bounties],
                "mine": seller == p2p.ctx.identity.public_key,
            }
        )
    return rows


async def revoke(p2p: SkillsHost, request: RevokeArgs) -> dict[str, Any]:
    """Revoke a skill this node published."""
    revocation = SkillRevocation(request.stable_skill_id, p2p.ctx.identity.public_key, request.reason or "revoked")
    await p2p.publish(REVOCATION_KIND, revocation)
    await revoke_listing(p2p.store(), revocation)
    return {"stable_skill_id": revocation.stable_skill_id}


async def endorse(p2p: SkillsHost, request: EndorseArgs) -> dict[str, Any]:
    """Endorse a listing (management nodes).

    A management node vouches for the listed version of a seller's skill (``SELLER_PEER_ID/SKILL_ID``)."""
    me = p2p.ctx.identity.public_key
    if not p2p.anchors.is_management(me):
        raise InvalidValue(
            "endorsements count only from management keys, and this node's key is not in [trust] management_keys"
        )
    seller_peer, _, skill_id = request.listing.partition("/")
    seller = ed25519_from_peer_id(seller_peer)
    if seller is None or not skill_id:
        raise InvalidValue("name the listing as SELLER_PEER_ID/SKILL_ID (see `bitterbot-node skills list`)")
    store = p2p.store()
    wire = await listing_envelope(store, seller.hex(), skill_id)
    if wire is None:
        raise NotFoundHere(f"no live listing of {skill_id} from {seller_peer} seen here")
    listing = LISTING.parse(decode_envelope(wire, max_bytes=1_000_000).body_map())
    endorsement = SkillEndorsement(seller, skill_id, listing.version, listing.content_hash)
    envelope = await p2p.publish(ENDORSEMENT_KIND, endorsement)
    await record_endorsement(store, endorsement, envelope)
    return {"stable_skill_id": skill_id, "version": listing.version, "content_hash": listing.content_hash}


async def post_bounty(p2p: SkillsHost, request: BountyArgs) -> dict[str, Any]:
    """Ask the network for a skill.

    Gossips a signed bounty: what skill is wanted and the USDC reward offered."""
    days = request.days
    if not 0 < days * 86_400 <= MAX_BOUNTY_S:
        raise InvalidValue(f"a bounty lasts more than 0 and at most {MAX_BOUNTY_S // 86_400} days")
    now = p2p.ctx.now_ms()
    bounty = SkillBounty(
        bounty_id=request.bounty_id or os.urandom(8).hex(),
        description=request.description,
        tags=tuple(request.tags),
        category=request.category,
        reward_micro_usdc=parse_usdc(request.reward),
        expires_ms=now + int(days * 86_400_000),
    )
    BOUNTY.parse(BOUNTY.body(bounty))  # the same schema peers apply: refuse here what they would refuse
    envelope = await p2p.publish(BOUNTY_KIND, bounty, now_ms=now)
    await record_bounty(p2p.store(), bounty, envelope)
    return {"bounty_id": bounty.bounty_id, "reward_micro_usdc": bounty.reward_micro_usdc,
            "expires_ms": bounty.expires_ms}  # fmt: skip


async def list_bounties(p2p: SkillsHost, request: PageArgs) -> list[dict[str, Any]]:
    """Live bounties, a page at a time.

    By the author's trust here, then reward; with how many listings answer each."""
    page = await bounties_page(
        p2p.store(), standing=p2p.trust.standing_of, now_ms=p2p.ctx.now_ms(),
        limit=request.limit, offset=request.offset,
    )  # fmt: skip
    me = p2p.ctx.identity.public_key.hex()
    return [
        {
            **b.as_dict(),
            "author_peer_id": peer_id_from_ed25519(bytes.fromhex(b.author)),
            "mine": b.author == me,
            "matching_listings": answering,
        }
        for b, answering in page.items
    ]
