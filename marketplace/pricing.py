"""Pricing a skill in USDC: plain functions, amounts in integer micro-USDC (6 decimals).

    price = base x quality x demand x reputation x scarcity, clamped to [minimum, maximum]

    quality    = success rate x average reward score (rewards in [0, 1])
    demand     = 1 + ln(unique buyers + bounty matches + 1) x 0.1
    reputation = 0.5 + the seller's reputation in [0, 1]          (a neutral seller: 1.0)
    scarcity   = 1.5 rare (<= 2 listings of its category seen), 1.2 uncommon (<= 9), 1.0 common

The factors are exact decimals; only the final price is rounded (half to even) to a
whole micro-USDC, so the same inputs give the same integer on every machine.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from typing import Any

from pydantic import Field, model_validator

from ground.settings import Section, SettingError
from marketplace.errors import InvalidValue

MICRO_PER_USDC = 1_000_000
RARE_AT_MOST = 2
UNCOMMON_AT_MOST = 9


class PriceSettings(Section):
    """The ``[marketplace]`` keys of pricing: the base price and the range every price is clamped to."""

    base_price_micro_usdc: int = Field(default=10_000, ge=1, le=10**12)  # 0.01 USDC
    """Skill prices, in integer micro-USDC (1 USDC = 1000000). The price of a skill is
    base x quality x demand x reputation x scarcity (`bitterbot-node skills price ID --explain`),
    clamped to [min, max]. Defaults: 0.01 USDC base, 0.001 to 100 USDC.
    """
    min_price_micro_usdc: int = Field(default=1_000, ge=1, le=10**12)  # 0.001 USDC
    max_price_micro_usdc: int = Field(default=100_000_000, ge=1, le=10**12)  # 100 USDC

    @model_validator(mode="after")
    def _range(self) -> PriceSettings:
        if not self.min_price_micro_usdc <= self.base_price_micro_usdc <= self.max_price_micro_usdc:
            raise SettingError("need min_price_micro_usdc <= base_price_micro_usdc <= max_price_micro_usdc")
        return self


@dataclass(frozen=True, slots=True)
class PriceInputs:
    executions: int
    successes: int
    reward_sum_milli: int  # sum of recorded rewards, each in thousandths (0..1000)
    unique_buyers: int = 0
    bounty_matches: int = 0
    seller_reputation_milli: int = 500  # 0..1000; 500 is neutral
    category_listings_seen: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.successes <= self.executions:
            raise InvalidValue("successes must be between 0 and executions")
        if not 0 <= self.reward_sum_milli <= 1000 * self.executions:
            raise InvalidValue("reward_sum_milli must be within 0..1000 per execution")
        if not 0 <= self.seller_reputation_milli <= 1000:
            raise InvalidValue("seller_reputation_milli must be in 0..1000")
        if min(self.unique_buyers, self.bounty_matches, self.category_listings_seen) < 0:
            raise InvalidValue("counts cannot be negative")


@dataclass(frozen=True, slots=True)
class PriceBreakdown:
    base_micro_usdc: int
    success_rate: Decimal
    average_reward: Decimal
    quality: Decimal
    demand: Decimal
    reputation: Decimal
    scarcity: Decimal
    scarcity_class: str
    unclamped_micro_usdc: int
    price_micro_usdc: int
    clamped: bool

    def to_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in asdict(self).items()}


def scarcity(category_listings_seen: int) -> tuple[Decimal, str]:
    if category_listings_seen <= RARE_AT_MOST:
        return Decimal("1.5"), "rare"
    if category_listings_seen <= UNCOMMON_AT_MOST:
        return Decimal("1.2"), "uncommon"
    return Decimal("1.0"), "common"


def price(inputs: PriceInputs, settings: PriceSettings | None = None) -> PriceBreakdown:
    s = settings or PriceSettings()
    with localcontext() as ctx:
        ctx.prec = 28
        if inputs.executions:
            success_rate = Decimal(inputs.successes) / Decimal(inputs.executions)
            average_reward = Decimal(inputs.reward_sum_milli) / Decimal(1000 * inputs.executions)
        else:
            success_rate = average_reward = Decimal(0)
        quality = success_rate * average_reward
        # ln is irrational: take it to 12 places so the factor is a fixed decimal on every machine.
        log_term = Decimal(repr(round(math.log(inputs.unique_buyers + inputs.bounty_matches + 1), 12)))
        demand = Decimal(1) + log_term * Decimal("0.1")
        reputation = Decimal("0.5") + Decimal(inputs.seller_reputation_milli) / Decimal(1000)
        scarce, scarce_class = scarcity(inputs.category_listings_seen)
        raw = Decimal(s.base_price_micro_usdc) * quality * demand * reputation * scarce
        unclamped = int(raw.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))
    final = min(s.max_price_micro_usdc, max(s.min_price_micro_usdc, unclamped))
    return PriceBreakdown(
        base_micro_usdc=s.base_price_micro_usdc,
        success_rate=success_rate,
        average_reward=average_reward,
        quality=quality,
        demand=demand,
        reputation=reputation,
        scarcity=scarce,
        scarcity_class=scarce_class,
        unclamped_micro_usdc=unclamped,
        price_micro_usdc=final,
        clamped=final != unclamped,
    )


def format_usdc(micro: int) -> str:
    """``12345`` -> ``"0.012345 USDC"``: integer arithmetic, no float on the way."""
    sign = "-" if micro < 0 else ""
    whole, frac = divmod(abs(micro), MICRO_PER_USDC)
    return f"{sign}{whole}.{frac:06d} USDC"


def parse_usdc(text: str) -> int:
    """``"0.5"`` or ``"0.5 USDC"`` -> ``500000`` micro-USDC: exact decimal, at most 6 places, not negative."""
    from decimal import InvalidOperation

    cleaned = text.strip().removesuffix("USDC").strip()
    try:
        amount = Decimal(cleaned)
    except InvalidOperation:
        raise InvalidValue(f"{text!r} is not an amount of USDC (like 0.25)") from None
    micro = amount * MICRO_PER_USDC
    if not amount.is_finite() or amount < 0 or micro != micro.to_integral_value():
        raise InvalidValue(f"{text!r}: USDC amounts are non-negative with at most 6 decimal places")
    return int(micro)
