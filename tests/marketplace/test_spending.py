"""Issue 47: what a purchase may cost depends on who asked for it (``marketplace.exchange.spending``).

Attack "the agent lifts its own ceiling": it passed its own ``max_price`` to ``skills.buy`` and
bought a 75 USDC listing past the 1 USDC ceiling. Only the person may pay past the ceiling, and the
agent's purchases of the last day stay within its daily budget, counted from the recorded purchases.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ground.authority import NotAllowed, Speaker
from marketplace.chain import Chain
from marketplace.errors import PurchaseError, SpendRefused
from marketplace.exchange.deals import Purchases, PurchaseState
from marketplace.exchange.spending import DAY_MS, Spending, SpendLimits, purchase_cap
from memory.intake.store import IntakeStore
from tests.marketplace.test_purchase import PRICE, close, trade

LIMITS = SpendLimits(ceiling_micro_usdc=1_000_000, agent_daily_budget_micro_usdc=3_000_000)


def cap(speaker: Speaker, price: int, max_price: int | None = None, spent_today: int = 0) -> int:
    return purchase_cap(speaker, skill="s", price=price, max_price=max_price, limits=LIMITS, spent_today=spent_today)


def test_only_the_person_pays_past_the_ceiling() -> None:
    with pytest.raises(NotAllowed, match="only the person"):
        cap(Speaker.AGENT, 500_000, max_price=75_000_000)  # the agent lifting its own ceiling
    with pytest.raises(SpendRefused, match="past the purchase ceiling"):
        cap(Speaker.AGENT, 75_000_000)
    assert cap(Speaker.PERSON, 75_000_000, max_price=75_000_000) == 75_000_000
    with pytest.raises(PurchaseError, match="pass --max-price"):
        cap(Speaker.PERSON, 75_000_000)  # the person's default is the ceiling too
    assert cap(Speaker.AGENT, 500_000) == 1_000_000
    with pytest.raises(PurchaseError, match="more than 100000"):
        cap(Speaker.AGENT, 500_000, max_price=100_000)
    with pytest.raises(NotAllowed):
        cap(Speaker.PEER, 1)


def test_the_agents_budget_and_not_the_persons() -> None:
    assert cap(Speaker.AGENT, 1_000_000, spent_today=2_000_000) == 1_000_000
    with pytest.raises(SpendRefused, match=r"daily budget of 3\.000000 USDC \(\[marketplace\] agent_daily_budget"):
        cap(Speaker.AGENT, 1_000_000, spent_today=2_000_001)
    assert cap(Speaker.PERSON, 1_000_000, spent_today=50_000_000) == 1_000_000


async def test_the_agents_spending_is_read_from_the_recorded_purchases(store: IntakeStore) -> None:
    now = [10 * DAY_MS]
    purchases = Purchases(store, lambda: now[0])
    for n, (speaker, price) in enumerate([(Speaker.AGENT, 700), (Speaker.PERSON, 5_000), (Speaker.AGENT, 300)]):
        await purchases.add(bytes([n]) * 32, b"s" * 32, "peer", b"quote", "escrow", speaker=speaker,
                            price_micro_usdc=price)  # fmt: skip
    await purchases.move(bytes([2]) * 32, PurchaseState.EXPIRED)  # nothing paid: given back
    # A new process over the same file (a restart) reads the same figure.
    spending = Spending(Purchases(store, lambda: now[0]), LIMITS, lambda: now[0])
    assert await spending.agent_spent_today() == 700
    async with spending.allow(Speaker.AGENT, skill="s", price=1_000, max_price=None):
        assert await spending.agent_spent_today() == 1_700  # reserved while its quote is asked for
    assert await spending.agent_spent_today() == 700
    now[0] += DAY_MS
    assert (await spending.report())["agent_spent_today_micro_usdc"] == 0  # a day later


@pytest.mark.slow
async def test_the_agent_cannot_buy_a_listing_past_the_ceiling_and_the_person_can(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_options={"spend_limits": SpendLimits(PRICE - 1, 10 * PRICE)})
    try:
        with pytest.raises(NotAllowed, match="the agent may not spend past the purchase ceiling"):
            await buyer.market.buy(seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade",
                                   max_price=10 * PRICE, speaker=Speaker.AGENT)  # fmt: skip
        with pytest.raises(SpendRefused, match="past the purchase ceiling"):
            await buyer.market.buy(seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade",
                                   speaker=Speaker.AGENT)  # fmt: skip
        assert await Purchases(buyer.store).recent() == []  # nothing asked of the seller
        bought = await buyer.market.buy(seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade",
                                        max_price=PRICE, speaker=Speaker.PERSON)  # fmt: skip
        assert bought.state == "completed"
        assert (await buyer.market.spending())["agent_spent_today_micro_usdc"] == 0
    finally:
        await close(buyer, seller)
