"""Disputes decided from the chain alone (issue 26): real nodes (libp2p on loopback) on the embedded
EVM and on anvil. Each test is one way a cheating buyer or seller won money or goods before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crypto.identity import Identity
from ground.authority import Speaker
from marketplace.chain import ESCROW_RULES, Chain
from marketplace.chain_types import Account, Commitment, DealTerms, Receipt
from marketplace.errors import PurchaseError
from marketplace.escrow import Escrow
from marketplace.exchange.arbitration import judge
from marketplace.exchange.deals import Purchases, PurchaseState, SaleRecord, Sales
from marketplace.exchange.market import Market
from marketplace.exchange.protocol import DeliveryRequest, quote_of, seal_skill
from marketplace.exchange.seller import COMMIT_AFTER_S, Seller
from memory.model import NewCrystal
from tests.marketplace.conftest import ARBITER, funds
from tests.marketplace.test_purchase import (
    PRICE,
    SKILL,
    BuyerThatNeverReleases,
    Side,
    TamperingSeller,
    close,
    terms_of,
    trade,
)

pytestmark = pytest.mark.slow  # real hosts and chains


async def arbiter_of(chain: Chain, side: Side) -> Market:
    """The escrow's arbiter: a management node's market (its wallet is the arbiter's key)."""
    await chain.fund(ARBITER.address, 0)
    return Market(Identity.generate(), ARBITER, side.store, chain, side.host)


async def purchase_state(buyer: Side, purchase_id: str) -> PurchaseState:
    record = await Purchases(buyer.store).get(bytes.fromhex(purchase_id))
    assert record is not None
    return record.state


async def test_a_bad_faith_dispute_of_a_good_delivery_loses_and_the_seller_is_paid(
    tmp_path: Path, chain: Chain
) -> None:
    """Attack "bad-faith dispute wins": the buyer disputed straight on the contract and the arbiter
    refunded it on evidence the buyer signed with a throwaway key; afterwards the seller's settle
    raised IllegalTransition on every round. Now the arbiter reads only the chain."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed"  # it has the skill and does not pay
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        pid = bytes.fromhex(result.purchase_id)
        with pytest.raises(PurchaseError, match="nothing to dispute"):
            await buyer.market.dispute(pid)  # an honest node does not contest what it received
        escrow = Escrow(chain)
        await escrow.dispute(buyer.wallet, await terms_of(buyer, result.purchase_id))  # this buyer does
        assert await seller.market.settle_sales() == {"disputed": 1}  # the seller answers with its secret
        arbiter = await arbiter_of(chain, buyer)
        with pytest.raises(PurchaseError, match="not the escrow's arbiter"):
            await seller.market.arbitrate(pid)  # a party cannot decide its own dispute
        (verdict,) = await arbiter.arbitrate_answered()
        assert verdict.to_seller and "exactly the listed content" in verdict.why
        assert await arbiter.arbitrate_answered() == []  # decided once
        assert await seller.market.settle_sales() == {"paid": 1}  # no IllegalTransition, paid
        assert await funds(chain, seller.wallet.address) == PRICE
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
    finally:
        await close(buyer, seller)


async def test_a_seller_that_delivered_and_committed_something_else_loses_the_dispute(
    tmp_path: Path, chain: Chain
) -> None:
    seller, buyer = await trade(tmp_path, chain, seller_class=TamperingSeller)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "refused"
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}  # it claims to have delivered
        assert await buyer.market.settle_purchases() == {"disputed": 1}  # the buyer's daemon disputes at once
        assert await seller.market.settle_sales() == {"disputed": 1}  # answered: its secret is on chain
        arbiter = await arbiter_of(chain, buyer)
        (verdict,) = await arbiter.arbitrate_answered()
        assert not verdict.to_seller and "not the listed content" in verdict.why
        assert await buyer.market.settle_purchases() == {"refunded": 1}
        assert await chain.balance(buyer.wallet.address) == 1_000_000
        await chain.advance_time(ESCROW_RULES.dispute_window_s + 1)
        assert await seller.market.settle_sales() == {"refunded": 1}
        assert await funds(chain, seller.wallet.address) == 0
    finally:
        await close(buyer, seller)


class SwitchingSeller(Seller):
    """Named fake: sends the buyer another skill off chain, and commits the listed one on chain
    (before, it then handed the arbiter a freshly signed delivery of the listed skill and was paid)."""

    async def _deliver(self, buyer: bytes, request: DeliveryRequest) -> bytes:
        sale = await self._sales.get(request.purchase_id)
        assert sale is not None
        listed = sale.crystal_id
        other = (await self._store.remember(NewCrystal("something else entirely"))).crystal.id
        async with self._store.transaction() as db:
            await db.execute("UPDATE sales SET crystal_id = ?", (other,))
        answer = await super()._deliver(buyer, request)
        async with self._store.transaction() as db:
            await db.execute("UPDATE sales SET crystal_id = ?", (listed,))
        return answer


async def test_a_seller_that_delivered_other_content_is_paid_only_for_what_it_committed(
    tmp_path: Path, chain: Chain
) -> None:
    """Attack "wrong delivery paid": the buyer refused the wrong delivery, the seller is paid only
    because the listed skill is on chain, sealed to the buyer, who takes it from there."""
    seller, buyer = await trade(tmp_path, chain, seller_class=SwitchingSeller)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "refused" and result.crystal_id is None
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        assert await buyer.market.settle_purchases() == {"completed": 1}  # read from the commitment
        record = await Purchases(buyer.store).get(bytes.fromhex(result.purchase_id))
        assert record is not None and record.crystal_id is not None
        assert (await buyer.store.get(record.crystal_id)).text == SKILL
        assert await seller.market.settle_sales() == {"paid": 1}  # the buyer released once it had it
    finally:
        await close(buyer, seller)


class EscrowCommittingGarbage:
    """Named fake, on the seller's side: every commitment it sends is sealed bytes of its own choosing."""

    def __init__(self, escrow: Escrow) -> None:
        self._escrow = escrow

    def __getattr__(self, name: str) -> Any:
        return getattr(self._escrow, name)

    async def commit(self, seller: Account, terms: DealTerms, commitment: Commitment) -> Receipt:
        return await self._escrow.commit(seller, terms, Commitment(commitment.ephemeral, commitment.salt,
                                                                    commitment.recipient, b"\0" * 64))  # fmt: skip


class SellerThatCommitsWithoutDelivering(Seller):
    """Named fake: drops every delivery stream after the lock, and commits on chain instead."""

    def __init__(self, *args: Any, garbage: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if garbage:
            self._escrow = EscrowCommittingGarbage(self._escrow)  # type: ignore[assignment]

    async def _deliver(self, buyer: bytes, request: DeliveryRequest) -> bytes:
        await super()._deliver(buyer, request)  # keeps the one-time secret, as a delivery would
        raise ConnectionError("stream dropped")


class SellerThatCommitsGarbage(SellerThatCommitsWithoutDelivering):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, garbage=True, **kwargs)


async def test_a_seller_that_commits_without_delivering_delivers_through_the_chain(
    tmp_path: Path, chain: Chain
) -> None:
    """Attack "seller paid without delivering": the buyer's record said completed with no crystal."""
    seller, buyer = await trade(tmp_path, chain, seller_class=SellerThatCommitsWithoutDelivering)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "locked" and "unreachable" in result.detail
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        assert await buyer.market.settle_purchases() == {"completed": 1}
        record = await Purchases(buyer.store).get(bytes.fromhex(result.purchase_id))
        assert record is not None and record.crystal_id is not None
        assert (await buyer.store.get(record.crystal_id)).text == SKILL
    finally:
        await close(buyer, seller)


async def test_a_seller_that_commits_garbage_without_delivering_is_disputed_and_refunded(
    tmp_path: Path, chain: Chain
) -> None:
    seller, buyer = await trade(tmp_path, chain, seller_class=SellerThatCommitsGarbage)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        assert await buyer.market.settle_purchases() == {"disputed": 1}
        # The seller answers (its real secret opens nothing it committed) or stays silent: either way
        # the buyer's money comes back. Here it answers and the arbiter decides.
        assert await seller.market.settle_sales() == {"disputed": 1}
        (verdict,) = await (await arbiter_of(chain, buyer)).arbitrate_answered()
        assert not verdict.to_seller and "does not open" in verdict.why
        assert await buyer.market.settle_purchases() == {"refunded": 1}
        assert await chain.balance(buyer.wallet.address) == 1_000_000
        assert await purchase_state(buyer, result.purchase_id) is PurchaseState.REFUNDED
    finally:
        await close(buyer, seller)


async def test_a_dispute_the_seller_never_answers_is_refunded_and_one_the_arbiter_ignores_is_paid(
    tmp_path: Path, chain: Chain
) -> None:
    """Attack "seller never paid" (2): a buyer that disputes and goes silent, with no arbiter
    decision; the seller never claimed a disputed deal. And the mirror: a seller that never answers."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        await Escrow(chain).dispute(buyer.wallet, await terms_of(buyer, result.purchase_id))
        assert await seller.market.settle_sales() == {"disputed": 1}  # answered; no arbiter anywhere
        assert await seller.market.settle_sales() == {}  # waiting out the arbitration window
        await chain.advance_time(ESCROW_RULES.dispute_window_s + ESCROW_RULES.arbitration_window_s)
        assert await seller.market.settle_sales() == {"paid": 1}
        assert await funds(chain, seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)


async def test_the_verdict_depends_on_the_chain_alone(tmp_path: Path, chain: Chain) -> None:
    """Whatever either party says off chain, the verdict is a function of the terms, the commitment
    and the published secret; a secret that is not the commitment's, or a box sealed to a key the
    buyer did not lock for, goes to the buyer."""
    seller, buyer = await trade(tmp_path, chain)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        quote = quote_of((await Purchases(buyer.store).get(bytes.fromhex(result.purchase_id))).quote)  # type: ignore[union-attr]
        terms, secret = quote.terms(), b"\5" * 32
        good = seal_skill(SKILL, quote, secret)
        assert judge(terms, good, secret).to_seller
        assert not judge(terms, good, b"\6" * 32).to_seller  # another secret
        assert not judge(terms, good, None).to_seller  # no answer
        assert not judge(terms, None, secret).to_seller  # nothing committed
        stranger = Identity.generate().public_key
        other_buyer = type(quote)(**{**{f: getattr(quote, f) for f in quote.__slots__}, "buyer": stranger})
        elsewhere = seal_skill(SKILL, other_buyer, secret)
        assert not judge(terms, elsewhere, secret).to_seller  # sealed to another key than the locked one
        sale = await Sales(seller.store).get(bytes.fromhex(result.purchase_id))
        assert isinstance(sale, SaleRecord) and sale.delivery_key is not None
    finally:
        await close(buyer, seller)
