"""The consumers of the market's gossip: skill listings (and the skill a free one carries),
revocations, bounties and endorsements, each bounded per author and in total.

Registered by the market part for the kinds it owns (``p2p.consumers``); what they ingested and
what the quotas evicted is counted in the network part's ``ingested`` and ``evicted`` (one
``peers``/``status`` report for everything peers sent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketplace.catalog.bounties import record_bounty
from marketplace.catalog.listings import record_endorsement, record_listing, revoke_listing
from marketplace.catalog.received_quota import bounties_bound, enforce_bound, listings_bound
from memory.governance.peer_quota import PeerContentQuota
from node.config import Config
from node.logs import get_logger
from p2p.consumers import GossipConsumers, Received
from p2p.ingest import apply_revocation, ingest_listing, standing_by_source
from p2p.messages import (
    KIND_BOUNTY,
    KIND_SKILL_ENDORSEMENT,
    KIND_SKILL_LISTING,
    KIND_SKILL_REVOCATION,
    SkillBounty,
    SkillEndorsement,
    SkillListing,
    SkillRevocation,
)
from p2p.trust.book import TrustLevel

if TYPE_CHECKING:
    from node.parts.p2p import P2PPart

log = get_logger("node.p2p")


class MarketGossip:
    def __init__(self, p2p: P2PPart, config: Config) -> None:
        self._p2p = p2p
        cfg = config.p2p
        self._quota = PeerContentQuota(
            per_author_crystals=cfg.peer_content_per_author,
            per_author_bytes=cfg.peer_content_bytes_per_author,
            total_crystals=cfg.peer_content_total,
            total_bytes=cfg.peer_content_bytes_total,
        )
        self._listings_bound = listings_bound(cfg.listings_per_seller, cfg.listings_total)
        self._bounties_bound = bounties_bound(cfg.bounties_per_author, cfg.bounties_total)
        self._me_hex = p2p.ctx.identity.public_key.hex()

    def register(self, consumers: GossipConsumers) -> None:
        consumers.register(KIND_SKILL_LISTING, self._listing)
        consumers.register(KIND_SKILL_REVOCATION, self._revocation)
        consumers.register(KIND_BOUNTY, self._bounty)
        consumers.register(KIND_SKILL_ENDORSEMENT, self._endorsement)

    async def _listing(self, received: Received) -> None:
        p2p, message, author = self._p2p, received.message, received.author
        assert isinstance(message, SkillListing)
        store = p2p.store()
        await record_listing(store, message, received.envelope)
        p2p.evicted["listings"] += await enforce_bound(
            store, self._listings_bound, author.hex(), p2p.trust.standing_of, self._me_hex
        )
        level = p2p.level_of_key(author)
        if level is TrustLevel.UNTRUSTED:
            log.info("p2p.skill_refused_untrusted", author=author.hex()[:16], skill=message.stable_skill_id)
            return
        result = await ingest_listing(
            store, message, author, author_has_standing=level in (TrustLevel.TRUSTED, TrustLevel.VERIFIED),
            quota=self._quota, standing=standing_by_source(p2p.trust.standing_of),
        )  # fmt: skip
        if result.evicted.crystals:
            p2p.evicted["crystals"] += result.evicted.crystals
            p2p.evicted["bytes"] += result.evicted.bytes
        p2p.ingested["skills"] += 1
        log.info(
            "p2p.skill_received",
            skill=message.stable_skill_id,
            version=message.version,
            outcome=result.outcome.value,
            crystal=result.crystal_id,
            held=result.held.reason if result.held else None,
        )

    async def _revocation(self, received: Received) -> None:
        message = received.message
        assert isinstance(message, SkillRevocation)
        await revoke_listing(self._p2p.store(), message)
        count = await apply_revocation(self._p2p.store(), message)
        self._p2p.ingested["revocations"] += 1
        log.info("p2p.skill_revoked", skill=message.stable_skill_id, crystals=count)

    async def _bounty(self, received: Received) -> None:
        message, p2p = received.message, self._p2p
        assert isinstance(message, SkillBounty)
        await record_bounty(p2p.store(), message, received.envelope)
        p2p.ingested["bounties"] += 1
        p2p.evicted["bounties"] += await enforce_bound(
            p2p.store(), self._bounties_bound, received.author.hex(), p2p.trust.standing_of, self._me_hex
        )

    async def _endorsement(self, received: Received) -> None:
        message = received.message
        assert isinstance(message, SkillEndorsement)
        await record_endorsement(self._p2p.store(), message, received.envelope)
        self._p2p.ingested["endorsements"] += 1
        log.info("p2p.skill_endorsed", skill=message.stable_skill_id, endorser=received.author.hex()[:16])
