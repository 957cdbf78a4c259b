"""Listings seen on the network: newest version wins, revocation, category counts, endorsements."""

from __future__ import annotations

from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from marketplace.catalog.listings import endorsers_of, listing_envelope, listings_in_category, live_listings
from marketplace.gossip.endorsement import ENDORSEMENT, KIND_SKILL_ENDORSEMENT, SkillEndorsement, record_endorsement
from marketplace.gossip.listing import record_listing
from marketplace.gossip.revocation import SkillRevocation, revoke_listing
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, SemanticType
from tests.p2p.conftest import NOW, listing, skill_envelope

SELLER = Identity.from_seed(b"s" * 32)


async def test_newest_version_wins_and_revocation_unlists(store: IntakeStore) -> None:
    v1, v2 = listing(content=None), listing(content=None, version=2, price_micro_usdc=20_000)
    assert await record_listing(store, v2, skill_envelope(SELLER, NOW, v2))
    assert not await record_listing(store, v1, skill_envelope(SELLER, NOW, v1))  # older: ignored
    (row,) = await live_listings(store)
    assert (row.version, row.price_micro_usdc, row.seller) == (2, 20_000, SELLER.public_key.hex())
    assert await listing_envelope(store, row.seller, row.stable_skill_id) is not None
    assert await listings_in_category(store, "ops") == 1
    assert await listings_in_category(store, "ops", excluding_seller=SELLER.public_key.hex()) == 0
    revoked = await revoke_listing(store, SkillRevocation("ops.rotate-logs", SELLER.public_key, "gone"))
    assert revoked == 1 and await live_listings(store) == [] and await listings_in_category(store, "ops") == 0


async def test_a_listing_signed_later_at_the_same_version_replaces_the_one_kept(store: IntakeStore) -> None:
    """Finding 8: a republish at the same version was dropped, so a new price, a new address or a
    listing again after a revocation never reached anyone."""
    first = listing(content=None, price_micro_usdc=10_000)
    assert await record_listing(store, first, skill_envelope(SELLER, NOW, first))
    repriced = listing(content=None, price_micro_usdc=30_000, seller_address="0x" + "ab" * 20)
    assert await record_listing(store, repriced, skill_envelope(SELLER, NOW + 1_000, repriced))
    (row,) = await live_listings(store)
    assert (row.version, row.price_micro_usdc, row.seller_address) == (1, 30_000, "0x" + "ab" * 20)
    assert not await record_listing(store, first, skill_envelope(SELLER, NOW, first))  # signed earlier: kept as is
    assert (await live_listings(store))[0].price_micro_usdc == 30_000
    await revoke_listing(store, SkillRevocation("ops.rotate-logs", SELLER.public_key, "gone"))
    assert await live_listings(store) == []
    assert await record_listing(store, repriced, skill_envelope(SELLER, NOW + 2_000, repriced))  # listed again
    assert [r.price_micro_usdc for r in await live_listings(store)] == [30_000]


async def test_an_endorsement_covers_exactly_the_content_it_names(store: IntakeStore) -> None:
    manager = Identity.from_seed(b"k" * 32)
    held = await store.remember(NewCrystal("Rotate logs with logrotate -f", semantic_type=SemanticType.SKILL))
    endorsed = SkillEndorsement(SELLER.public_key, "ops.rotate-logs", 1, held.crystal.content_hash)
    body = pack_body(ENDORSEMENT.body(endorsed))
    await record_endorsement(store, endorsed, seal_envelope(manager, KIND_SKILL_ENDORSEMENT, body, now_ms=NOW))
    seller = SELLER.public_key.hex()
    assert await endorsers_of(store, seller, "ops.rotate-logs", held.crystal.content_hash) == [manager.public_key.hex()]
    assert await endorsers_of(store, seller, "ops.rotate-logs", "cd" * 32) == []  # a new version needs its own
    crystal = await store.get(held.crystal.id)
    assert crystal.verification.is_verified and crystal.verification.verified_by == manager.public_key.hex()
