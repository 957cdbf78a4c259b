"""Bounties: matching rules, storage and expiry, listings ordered by bounty, demand in a skill's price."""

from __future__ import annotations

import time
from decimal import Decimal

from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from marketplace.catalog.bounties import BountyRow, bounties_answered_by, live_bounties, matches, purge_expired_bounties
from marketplace.catalog.browse import bounties_page, listings_page
from marketplace.executions import record_execution
from marketplace.gossip.bounty import BOUNTY, KIND_BOUNTY, SkillBounty, record_bounty
from marketplace.gossip.listing import KIND_SKILL_LISTING, LISTING, SkillListing, record_listing
from marketplace.offer import price_of
from marketplace.pricing import PriceSettings
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Scope, SemanticType, SkillVersion

BUYER = Identity.from_seed(b"b" * 32)
SELLER = Identity.from_seed(b"s" * 32)
DAY = 86_400_000


def _now() -> int:
    return time.time_ns() // 1_000_000


def row(description: str, tags: tuple[str, ...] = (), category: str = "") -> BountyRow:
    return BountyRow("b1", description, tags, category, 1, 0, author=BUYER.public_key.hex())


def test_a_bounty_matches_by_category_tag_or_two_of_its_words() -> None:
    assert matches(row("anything", category="Ops"), text="x", tags=(), category="ops")
    assert matches(row("anything", tags=("postgres",)), text="x", tags=("Postgres", "db"), category="")
    wanted = row("Upgrade a Postgres cluster without downtime")
    assert matches(wanted, text="Zero-downtime upgrade of postgres with pg_upgrade", tags=(), category="")
    assert not matches(wanted, text="Postgres backups to S3", tags=(), category="")  # one word of four
    assert not matches(wanted, text="anything", tags=(), category="")
    assert matches(row("Kubernetes"), text="kubernetes rollout", tags=(), category="")  # its only word
    assert not matches(row("how to do it"), text="how to do it", tags=(), category="")  # no significant word


async def _post(store: IntakeStore, bounty: SkillBounty, author: Identity = BUYER) -> None:
    envelope = seal_envelope(author, KIND_BOUNTY, pack_body(BOUNTY.body(bounty)), now_ms=_now())
    await record_bounty(store, bounty, envelope)


async def test_bounties_expire_and_a_reissue_replaces_the_reward(store: IntakeStore) -> None:
    now = _now()
    await _post(store, SkillBounty("pg", "Upgrade Postgres without downtime", ("db",), "", 500_000, now + DAY))
    await _post(store, SkillBounty("old", "Anything at all", (), "", 9_000_000, now - 1))
    assert [b.bounty_id for b in await live_bounties(store, now)] == ["pg"]
    await _post(store, SkillBounty("pg", "Upgrade Postgres without downtime", ("db",), "", 750_000, now + DAY))
    (live,) = await live_bounties(store, now)
    assert live.reward_micro_usdc == 750_000 and live.tags == ("db",)
    assert await purge_expired_bounties(store, now) == 1
    assert await purge_expired_bounties(store, now) == 0


async def _list(store: IntakeStore, skill_id: str, title: str, tags: tuple[str, ...], received: int) -> None:
    listing = SkillListing(skill_id, 1, "ab" * 32, title, "", tags, "", 10_000, "", 3, 3, None)
    envelope = seal_envelope(SELLER, KIND_SKILL_LISTING, pack_body(LISTING.body(listing)), now_ms=received)
    await record_listing(store, listing, envelope)


def alike(key: str) -> tuple[int, float]:
    return (1, 0.0)


async def test_listings_carry_the_bounties_they_answer_and_those_answering_mine_come_first(store: IntakeStore) -> None:
    now = _now()
    me = BUYER.public_key.hex()
    await _list(store, "db.pg-upgrade", "Postgres major upgrade", ("db",), now)
    await _list(store, "ops.logs", "Rotate logs", ("ops",), now)  # newer row: received second

    async def page() -> list[tuple[str, list[str]]]:
        listed = await listings_page(store, standing=alike, me=me, now_ms=now)
        return [(e.listing.stable_skill_id, [b.bounty_id for b in e.bounties]) for e in listed.items]

    assert await page() == [("ops.logs", []), ("db.pg-upgrade", [])]  # newest first
    await _post(store, SkillBounty("pg", "Upgrade Postgres", ("db",), "", 500_000, now + DAY))
    assert await page() == [("db.pg-upgrade", ["pg"]), ("ops.logs", [])]  # answers my bounty: first
    # A seller's own bounty never counts for its own listing.
    await _post(store, SkillBounty("own", "Rotate logs", ("ops",), "", 1, now + DAY), author=SELLER)
    assert (await page())[1] == ("ops.logs", [])
    counted = await bounties_page(store, standing=alike, now_ms=now)
    assert [(b.bounty_id, n) for b, n in counted.items] == [("pg", 1), ("own", 0)]


async def test_bounty_matches_raise_the_price_of_a_local_skill(store: IntakeStore) -> None:
    skill = await store.remember(
        NewCrystal("Blue-green deploy: switch the router after health checks", semantic_type=SemanticType.SKILL,
                   scope=Scope.SHARED, skill=SkillVersion("ops.blue-green", 1, tags=("deploy",), category="ops"))
    )  # fmt: skip
    for _ in range(3):
        await record_execution(store, skill.crystal.id, success=True, reward_milli=1000, actor="test")
    settings = PriceSettings(10_000, 1_000, 100_000_000)
    me = SELLER.public_key.hex()
    inputs, plain, _, _ = await price_of(store, skill.crystal, settings, reputation_milli=500, me=me)
    assert inputs.bounty_matches == 0 and plain.demand == Decimal(1)
    now = _now()
    await _post(store, SkillBounty("bg", "Blue-green deployments", ("deploy",), "", 200_000, now + DAY))
    await _post(store, SkillBounty("mine", "Blue-green deployments", ("deploy",), "", 1, now + DAY), author=SELLER)
    assert len(await bounties_answered_by(store, text="x", tags=("deploy",), category="", now_ms=now, me=me)) == 1
    inputs, priced, _, _ = await price_of(store, skill.crystal, settings, reputation_milli=500, me=me)
    # One bounty (not its own): demand 1 + ln(2) x 0.1 = 1.0693147180560; quality 1, reputation 1, rare 1.5.
    assert inputs.bounty_matches == 1 and priced.demand == Decimal("1.0693147180560")
    assert priced.price_micro_usdc == 16_040  # 10,000 x 1.0693147 x 1.5 = 16,039.72 -> 16,040
