"""Pricing factors against hand-computed values; the quality gate; recorded executions."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from marketplace.executions import ExecutionStats, execution_stats, record_execution
from marketplace.pricing import PriceInputs, PriceSettings, format_usdc, price, scarcity
from marketplace.quality import refusals
from memory.errors import CrystalNotFound
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Scope, SemanticType


def test_every_factor_by_hand() -> None:
    # 3 of 4 succeeded, rewards 1, 1, 1, 0: quality 0.75 x 0.75 = 0.5625.
    # 2 unique buyers: demand 1 + ln(3) x 0.1 = 1.10986122887. Neutral seller: 1.0. No listings seen: rare 1.5.
    # 10,000 x 0.5625 x 1.10986122887 x 1.0 x 1.5 = 9,364.454 -> 9,364 micro-USDC.
    result = price(PriceInputs(executions=4, successes=3, reward_sum_milli=3000, unique_buyers=2))
    assert (result.success_rate, result.average_reward, result.quality) == (
        Decimal("0.75"),
        Decimal("0.75"),
        Decimal("0.5625"),
    )
    assert result.demand == Decimal("1.1098612288668")
    assert (result.reputation, result.scarcity, result.scarcity_class) == (Decimal("1.0"), Decimal("1.5"), "rare")
    assert result.price_micro_usdc == 9_364 and not result.clamped
    assert format_usdc(result.price_micro_usdc) == "0.009364 USDC"


def test_bounty_matches_count_as_demand_and_reputation_scales() -> None:
    base = PriceInputs(executions=5, successes=5, reward_sum_milli=5000, category_listings_seen=50)
    assert price(base).price_micro_usdc == 10_000  # every factor 1
    with_bounty = PriceInputs(
        executions=5, successes=5, reward_sum_milli=5000, category_listings_seen=50, bounty_matches=1
    )
    assert price(with_bounty).price_micro_usdc == 10_693  # 10,000 x (1 + ln 2 x 0.1) = 10,693.147
    trusted = PriceInputs(
        executions=5, successes=5, reward_sum_milli=5000, category_listings_seen=50, seller_reputation_milli=1000
    )
    shunned = PriceInputs(
        executions=5, successes=5, reward_sum_milli=5000, category_listings_seen=50, seller_reputation_milli=0
    )
    assert (price(trusted).price_micro_usdc, price(shunned).price_micro_usdc) == (15_000, 5_000)


def _seed_price(
    base: float, success_rate: float, reward: float, buyers: int, bounties: int, reputation: float, scarce: float
) -> float:
    """The seed's formula as it is written (base x quality x demand x reputation x scarcity), in floats."""
    return base * (success_rate * reward) * (1 + math.log(buyers + bounties + 1) * 0.1) * reputation * scarce


@pytest.mark.parametrize("reputation_milli", [0, 250, 500, 750, 1000])
@pytest.mark.parametrize(("executions", "successes", "reward_milli"), [(3, 3, 3000), (5, 3, 2000), (10, 8, 7000)])
@pytest.mark.parametrize(("buyers", "bounties", "seen"), [(0, 0, 0), (2, 1, 5), (40, 3, 50)])
def test_the_price_is_the_seeds_formula_with_our_reputation_factor(
    reputation_milli: int, executions: int, successes: int, reward_milli: int, buyers: int, bounties: int, seen: int
) -> None:
    """Every factor but reputation is the seed's; reputation is 0.5 + the score where the seed has the
    score itself, so ours is the seed's price times (0.5 + r) / r, and at r = 0 the seed's is 0."""
    inputs = PriceInputs(executions, successes, reward_milli, buyers, bounties, reputation_milli, seen)
    ours = price(inputs, PriceSettings(minimum_micro_usdc=1)).unclamped_micro_usdc
    r = reputation_milli / 1000
    scarce = 1.5 if seen <= 2 else 1.2 if seen <= 9 else 1.0
    args = (10_000.0, successes / executions, reward_milli / 1000 / executions, buyers, bounties)
    assert ours == round(_seed_price(*args, 0.5 + r, scarce))
    seed = _seed_price(*args, r, scarce)
    if r == 0:
        assert seed == 0 and ours > 0  # a new seller's skill would be free under the seed's factor
    else:
        assert abs(ours - seed * (0.5 + r) / r) <= (0.5 + r) / r  # the seed's, up to its rounding


@pytest.mark.parametrize(("seen", "factor", "name"), [(0, "1.5", "rare"), (2, "1.5", "rare"), (3, "1.2", "uncommon"),
                                                      (9, "1.2", "uncommon"), (10, "1.0", "common")])  # fmt: skip
def test_scarcity_classes(seen: int, factor: str, name: str) -> None:
    assert scarcity(seen) == (Decimal(factor), name)


def test_prices_are_clamped_to_the_configured_range() -> None:
    cheap = price(PriceInputs(executions=3, successes=3, reward_sum_milli=150, category_listings_seen=10))
    assert (cheap.unclamped_micro_usdc, cheap.price_micro_usdc, cheap.clamped) == (500, 1_000, True)
    settings = PriceSettings(base_micro_usdc=10_000, minimum_micro_usdc=1_000, maximum_micro_usdc=12_000)
    dear = price(PriceInputs(executions=3, successes=3, reward_sum_milli=3000, seller_reputation_milli=1000), settings)
    assert (dear.unclamped_micro_usdc, dear.price_micro_usdc) == (22_500, 12_000)
    with pytest.raises(ValueError, match="minimum <= base <= maximum"):
        PriceSettings(base_micro_usdc=10, minimum_micro_usdc=100)
    with pytest.raises(ValueError, match="successes"):
        PriceInputs(executions=1, successes=2, reward_sum_milli=0)
    assert format_usdc(1_500_000) == "1.500000 USDC" and format_usdc(0) == "0.000000 USDC"


async def test_the_quality_gate_needs_three_executions_and_sixty_percent(store: IntakeStore) -> None:
    skill = (
        await store.remember(
            NewCrystal("Deploy with blue-green switch", semantic_type=SemanticType.SKILL, scope=Scope.SHARED)
        )
    ).crystal
    assert refusals(skill, await execution_stats(store, skill.id)) == ["it needs at least 3 recorded executions, has 0"]
    await record_execution(store, skill.id, success=True, reward_milli=900)
    await record_execution(store, skill.id, success=False, reward_milli=0)
    stats = await record_execution(store, skill.id, success=False, reward_milli=100)
    assert (stats.executions, stats.successes, stats.reward_sum_milli) == (3, 1, 1000)
    assert refusals(skill, stats) == ["it needs at least 60% success, has 33% (1 of 3)"]
    stats = await record_execution(store, skill.id, success=True, reward_milli=1000)
    stats = await record_execution(store, skill.id, success=True, reward_milli=1000)
    assert refusals(skill, stats) == []  # 3 of 5 is exactly 60%


async def test_memories_secrets_and_private_skills_are_never_listable(store: IntakeStore) -> None:
    fact = (await store.remember(NewCrystal("My sister lives in Porto", semantic_type=SemanticType.FACT))).crystal
    secret = (
        await store.remember(
            NewCrystal("Deploy with password: hunter2", semantic_type=SemanticType.SKILL, scope=Scope.SHARED)
        )
    ).crystal
    private = (await store.remember(NewCrystal("Private trick", semantic_type=SemanticType.SKILL))).crystal
    proven = ExecutionStats(10, 10, 10_000)
    assert any("memories are never listed" in r for r in refusals(fact, proven))
    assert any("confidential" in r for r in refusals(secret, proven))
    assert refusals(private, proven) == [
        f"it is private: `bitterbot-node skills publish {private.id}` (the person's) makes it public"
    ]
    assert refusals(private, proven, publishing=True) == []  # publishing is what makes it public
    with pytest.raises(ValueError, match="not a fact"):
        await record_execution(store, fact.id, success=True, reward_milli=1000)
    with pytest.raises(ValueError, match="reward must be in"):
        await record_execution(store, private.id, success=True, reward_milli=1500)
    with pytest.raises(CrystalNotFound):
        await record_execution(store, "nope", success=True, reward_milli=1000)
