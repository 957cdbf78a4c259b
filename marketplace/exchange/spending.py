"""How much a purchase may cost, by who asked for it: the one place the purchase ceiling and the
agent's daily budget are checked, asked of the authority table (``ground.authority``).

- Anyone's purchase stops at the ceiling (``[marketplace] max_purchase_micro_usdc``) unless a
  ``max_price`` above it is given, and only the person may give one (``SPEND_PAST_CEILING``).
- The agent's purchases of the last 24 hours, as recorded in the ``purchases`` table (so a restart
  resets nothing), plus the one asked for, stay within its daily budget
  (``[marketplace] agent_daily_budget_micro_usdc``). The person's purchases do not count against
  it and are not limited by it.

A purchase is reserved from its check until its row is written, so two of the agent's purchases at
once cannot both pass a budget that holds only one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ground.authority import Capability, Speaker, may, require, spend_allowance
from ground.clock import Clock
from marketplace.errors import PurchaseError, SpendRefused
from marketplace.exchange.deals import Purchases
from marketplace.limits import SpendLimits
from marketplace.pricing import format_usdc

DAY_MS = 86_400_000


def purchase_cap(
    speaker: Speaker, *, skill: str, price: int, max_price: int | None, limits: SpendLimits, spent_today: int
) -> int:
    """The most ``speaker`` may pay for this purchase (the quote is held to it too), or why not:
    ``SpendRefused`` (403) for what the authority table refuses, ``PurchaseError`` for a listing
    dearer than the caller's own limit."""
    ceiling = limits.max_purchase_micro_usdc
    if max_price is not None and max_price > ceiling:
        require(speaker, Capability.SPEND_PAST_CEILING, f"--max-price {format_usdc(max_price)} above the ceiling")
    why = spend_allowance(
        speaker, price=price, ceiling=ceiling, spent_today=spent_today, budget=limits.agent_daily_budget_micro_usdc
    )
    if why is not None:
        raise SpendRefused(speaker, why)
    cap = ceiling if max_price is None else max_price
    if price > cap and max_price is None:
        raise PurchaseError(
            f"{skill} asks {format_usdc(price)}, above this node's ceiling of {format_usdc(ceiling)} "
            "([marketplace] max_purchase_micro_usdc); pass --max-price to pay more"
        )
    if price > cap:
        raise PurchaseError(f"the listing asks {price} micro-USDC, more than {cap}")
    return cap


class Spending:
    """The ceiling and the agent's budget, over this node's recorded purchases."""

    def __init__(self, purchases: Purchases, limits: SpendLimits, clock: Clock) -> None:
        self._purchases = purchases
        self.limits = limits
        self._now_ms = clock
        self._reserved = 0  # the agent's purchases checked and not yet recorded

    async def agent_spent_today(self) -> int:
        """Micro-USDC the agent's purchases of the last 24 hours took or may take (a refund, an
        expired quote or a failed payment gives it back), with those under way."""
        since = self._now_ms() - DAY_MS
        return await self._purchases.spent_by(Speaker.AGENT, since) + self._reserved

    async def report(self) -> dict[str, int]:
        """What ``status`` and the dashboard show of the agent's budget."""
        spent = await self.agent_spent_today()
        budget = self.limits.agent_daily_budget_micro_usdc
        return {
            "ceiling_micro_usdc": self.limits.max_purchase_micro_usdc,
            "agent_daily_budget_micro_usdc": budget,
            "agent_spent_today_micro_usdc": spent,
            "agent_left_today_micro_usdc": max(0, budget - spent),
        }

    @asynccontextmanager
    async def allow(self, speaker: Speaker, *, skill: str, price: int, max_price: int | None) -> AsyncIterator[int]:
        """Check the purchase (``purchase_cap``) and hold its price against the budget until the
        block, which records the purchase, ends; yields the cap."""
        counted = not may(speaker, Capability.SPEND_PAST_CEILING)
        spent = await self.agent_spent_today() if counted else 0
        cap = purchase_cap(speaker, skill=skill, price=price, max_price=max_price, limits=self.limits,
                           spent_today=spent)  # fmt: skip
        reserved = price if counted else 0
        self._reserved += reserved
        try:
            yield cap
        finally:
            self._reserved -= reserved
