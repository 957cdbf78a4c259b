"""Issue 49: the ways held-out attacks still won against escrow v2, each tried again as the cheat
would, between real nodes (libp2p on loopback, real stores) on the embedded EVM and on anvil."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ground.authority import Speaker
from marketplace.chain import Chain
from marketplace.errors import ChainError
from marketplace.escrow import Escrow
from marketplace.exchange.buyer import Deal
from marketplace.exchange.deals import Sales, SaleState
from marketplace.exchange.protocol import DeliveryRequest
from tests.marketplace.conftest import funds, idle
from tests.marketplace.test_purchase import PRICE, BuyerThatNeverReleases, close, terms_of, trade

pytestmark = pytest.mark.slow  # real hosts and chains


class BuyerThatAsksLateOnAnIdleChain(BuyerThatNeverReleases):
    """Named fake: locks, then lets the chain sit idle (no block mined) until 100 s before the
    deadline, and asks for the delivery then; it never releases what it gets."""

    async def _receive(self, deal: Deal, request: DeliveryRequest) -> Any:
        await idle(self._chain, deal.quote.deadline_s - 100 - await self._chain.timestamp())
        return await super()._receive(deal, request)


async def test_an_idle_chain_never_makes_the_seller_deliver_what_it_cannot_commit_in_time(
    tmp_path: Path, chain: Chain
) -> None:
    """Attack "idle-chain timing": the seller read now from the latest block, minutes old on a chain
    that mines only on demand, delivered off chain, and its commitment then failed past the
    deadline: the buyer refunded and kept the skill."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatAsksLateOnAnIdleChain)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed"  # the buyer has the skill: the seller must be paid
        sale = await Sales(seller.store).get(bytes.fromhex(result.purchase_id))
        assert sale is not None and sale.state is SaleState.COMMITTED  # committed before the skill left
        await idle(chain, 101)  # past the deadline
        with pytest.raises(ChainError, match="not refundable"):
            await Escrow(chain).refund(buyer.wallet, await terms_of(buyer, result.purchase_id))
        await chain.advance_time(3_601)
        assert await seller.market.settle_sales() == {"paid": 1}
        assert await funds(chain, seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)
