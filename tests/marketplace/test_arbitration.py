"""A disputed purchase goes to the arbiter, who judges the seller's own signed messages (issue 15):
real nodes on the embedded EVM and on anvil."""

from __future__ import annotations

from pathlib import Path

import pytest

from crypto.envelope import pack_body
from crypto.identity import Identity
from marketplace.chain import ESCROW_RULES, Chain
from marketplace.errors import PurchaseError
from marketplace.escrow import Escrow
from marketplace.exchange.arbitration import EvidenceRefused, evidence_of, judge
from marketplace.exchange.deals import Purchases
from marketplace.exchange.market import Market
from marketplace.exchange.seller import COMMIT_AFTER_S
from tests.marketplace.conftest import ARBITER, funds
from tests.marketplace.test_purchase import (
    PRICE,
    BuyerThatNeverReleases,
    Side,
    TamperingSeller,
    close,
    terms_of,
    trade,
)

pytestmark = pytest.mark.slow  # real hosts and chains


async def evidence_from(buyer: Side, purchase_id: str) -> bytes:
    record = await Purchases(buyer.store).get(bytes.fromhex(purchase_id))
    assert record is not None and record.delivery is not None  # the buyer kept what the seller signed
    return evidence_of(record.quote, record.delivery)


async def test_a_buyer_disputing_a_good_delivery_loses_and_the_seller_is_paid(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade")
        assert result.state == "completed"  # it has the skill and does not pay
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        escrow, pid = Escrow(chain), bytes.fromhex(result.purchase_id)
        with pytest.raises(PurchaseError, match="nothing to dispute"):
            await buyer.market.dispute(pid)  # an honest node does not contest what it received
        await escrow.dispute(buyer.wallet, await terms_of(buyer, result.purchase_id))  # this buyer does
        assert await seller.market.settle_sales() == {"disputed": 1}
        verdict = await judge(await evidence_from(buyer, result.purchase_id), escrow)
        assert verdict.to_seller and "exactly the listed content" in verdict.why
        sellers = await seller.market.evidence(pid)  # the seller's own copy says the same
        assert sellers is not None and (await judge(sellers, escrow)).to_seller
        with pytest.raises(PurchaseError, match="not the escrow's arbiter"):
            await seller.market.arbitrate(sellers)  # a party cannot decide its own dispute
        await chain.fund(ARBITER.address, 0)
        arbiter = Market(Identity.generate(), ARBITER, buyer.store, chain, buyer.host)  # a management node's
        assert (await arbiter.arbitrate(sellers)).to_seller
        assert await seller.market.settle_sales() == {"paid": 1}
        assert await funds(chain, seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)


async def test_a_seller_that_delivered_something_else_loses_the_dispute(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, seller_class=TamperingSeller)
    try:
        result = await buyer.market.buy(seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade")
        assert result.state == "refused"
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}  # it claims to have delivered
        assert await buyer.market.refund_due() == []  # ... and the buyer's daemon disputes at once
        assert (await Purchases(buyer.store).get(bytes.fromhex(result.purchase_id))).state == "disputed"  # type: ignore[union-attr]
        escrow = Escrow(chain)
        verdict = await judge(await evidence_from(buyer, result.purchase_id), escrow)
        assert not verdict.to_seller and "not the listed content" in verdict.why
        await chain.fund(ARBITER.address, 0)
        await escrow.resolve(ARBITER, verdict.terms, to_seller=False)
        assert await buyer.market.refund_due() == [result.purchase_id]
        assert await chain.balance(buyer.wallet.address) == 1_000_000
        await chain.advance_time(ESCROW_RULES.dispute_window_s + 1)
        assert await seller.market.settle_sales() == {"refunded": 1}
        assert await funds(chain, seller.wallet.address) == 0
    finally:
        await close(buyer, seller)


async def test_evidence_that_is_not_the_sellers_or_not_in_dispute_is_refused(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, seller_class=TamperingSeller)
    try:
        result = await buyer.market.buy(seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade")
        evidence = await evidence_from(buyer, result.purchase_id)
        escrow = Escrow(chain)
        with pytest.raises(EvidenceRefused, match="no disputed deal on these terms"):
            await judge(evidence, escrow)  # locked, not disputed
        record = await Purchases(buyer.store).get(bytes.fromhex(result.purchase_id))
        assert record is not None and record.delivery is not None
        forged = bytearray(record.delivery)
        forged[-1] ^= 1  # the signature no longer holds
        with pytest.raises(EvidenceRefused, match="not two signed messages"):
            await judge(evidence_of(record.quote, bytes(forged)), escrow)
        with pytest.raises(EvidenceRefused, match="not an evidence file"):
            await judge(pack_body({"quote": 1}), escrow)
    finally:
        await close(buyer, seller)
