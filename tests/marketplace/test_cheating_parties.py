"""Issue 26: the ways a cheating buyer or seller won money or goods against the escrow, each tried
again as the cheat would (a modified client, or raw transactions), on the embedded EVM and on
anvil. Real nodes (libp2p on loopback), the real contract. The disputes are in test_arbitration."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from web3 import Web3

from crypto.envelope import decode_envelope, pack_body, seal_envelope
from crypto.identity import Identity
from ground.authority import Speaker
from marketplace.chain import ESCROW_RULES, Chain
from marketplace.chain_types import Commitment, DealTerms, Receipt
from marketplace.errors import ChainError
from marketplace.escrow import Escrow
from marketplace.exchange.advice import purchase_advice, sale_advice
from marketplace.exchange.buyer import Buyer, Deal
from marketplace.exchange.deals import Purchases, PurchaseState, Sales, SaleState
from marketplace.exchange.protocol import KIND_ERROR, KIND_QUOTE, KIND_QUOTE_REQUEST, DeliveryRequest
from marketplace.exchange.seller import COMMIT_AFTER_S
from marketplace.limits import SellerLimits
from tests.marketplace.conftest import ANVIL, ARBITER, NO_ANVIL, anvil_process, funds
from tests.marketplace.test_arbitration import SellerThatCommitsGarbage
from tests.marketplace.test_purchase import PRICE, BuyerThatNeverReleases, Side, close, terms_of, trade

pytestmark = pytest.mark.slow  # real hosts and chains


class BuyerThatAsksLate(Buyer):
    """Named fake: locks on the quoted terms, then waits (chain time) until ``ask_at`` seconds from
    the deadline before it asks for the delivery: 1 s after it, or 2 s before it."""

    ask_at = 1

    async def _receive(self, deal: Deal, request: DeliveryRequest) -> Any:
        now = await self._chain.timestamp()
        await self._chain.advance_time(deal.quote.deadline_s + self.ask_at - now)
        return await super()._receive(deal, request)


class BuyerThatAsksJustBefore(BuyerThatAsksLate):
    ask_at = -2


async def test_a_delivery_asked_for_after_the_deadline_reveals_nothing(tmp_path: Path, chain: Chain) -> None:
    """Attack "free skill by timing": the seller delivered without checking the time left, its
    commit then failed, and the buyer refunded and kept the skill."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatAsksLate)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "refused" and "too late to deliver" in result.detail
        assert (await buyer.store.stats())["total"] == 0  # nothing reached the buyer
        settled = await buyer.market.settle_purchases()
        assert settled == {"refunded": 1}, (settled, buyer.market.stuck())
        # Not a default: it sold nothing. It refused before any transaction (issue 49: a commit past
        # the deadline only reverts, at its cost), so there is nothing to settle until the quote lapses.
        assert await seller.market.settle_sales() == {}
        assert await chain.balance(buyer.wallet.address) == 1_000_000
    finally:
        await close(buyer, seller)


async def test_a_delivery_asked_for_just_before_the_deadline_is_committed_first_and_paid(
    tmp_path: Path, chain: Chain
) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatAsksJustBefore)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed" and result.crystal_id is not None
        pid = bytes.fromhex(result.purchase_id)
        sale = await Sales(seller.store).get(pid)
        assert sale is not None and sale.state in (SaleState.COMMITTED, SaleState.PAID)
        # Whatever the buyer does now, no refund: the deal was committed before the skill left.
        await chain.advance_time(10)
        with pytest.raises(ChainError, match="not refundable"):
            await Escrow(chain).refund(buyer.wallet, await terms_of(buyer, result.purchase_id))
        assert await funds(chain, seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)


async def test_a_seller_stops_selling_to_a_defaulting_wallet_under_any_node_key(tmp_path: Path, chain: Chain) -> None:
    """The ban was per node key: the same wallet under a fresh key was quoted again."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed"
        # The seller is offline past the deadline (it never commits); the buyer takes its money back.
        await chain.advance_time(601)
        await Escrow(chain).refund(buyer.wallet, await terms_of(buyer, result.purchase_id))
        assert await seller.market.settle_sales() == {"defaulted": 1}
        fresh_key = Identity.generate()
        body = {"stable_skill_id": "db.pg-upgrade", "version": 1, "buyer_address": buyer.wallet.address}
        request = seal_envelope(fresh_key, KIND_QUOTE_REQUEST, pack_body(body), now_ms=time.time_ns() // 10**6)
        answer = decode_envelope(await seller.market.answer("fresh-peer", request.encode()), max_bytes=10**6)
        assert answer.kind == KIND_ERROR and "no longer sells to you" in str(answer.body_map()["error"])
    finally:
        await close(buyer, seller)


async def test_a_sale_past_its_deadline_stops_no_other_sale(tmp_path: Path, chain: Chain) -> None:
    """Attack "seller never paid" (1): one sale delivered too late to commit, and never refunded,
    made every settle round fail on it, so no later sale was ever committed or claimed."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        first = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        await chain.advance_time(601)  # the seller slept through the first deal's deadline
        second = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert (first.state, second.state) == ("completed", "completed")
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}  # the second goes on
        assert seller.market.stuck() == {}
        await chain.advance_time(ESCROW_RULES.dispute_window_s + 1)
        assert await seller.market.settle_sales() == {"paid": 1}
        assert await funds(chain, seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)


async def test_a_buyer_down_through_the_dispute_window_records_the_loss_and_stops_no_round(
    tmp_path: Path, chain: Chain
) -> None:
    """Attack "seller never paid" (3): a node that was down for an hour after a seller committed a
    delivery it refused failed its dispute every round, and its own sales never settled."""
    seller, buyer = await trade(tmp_path, chain, seller_class=SellerThatCommitsGarbage)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        await chain.advance_time(ESCROW_RULES.dispute_window_s + 1)  # the buyer's node was down all that time
        assert await buyer.market.settle_purchases() == {"lost": 1}
        assert await buyer.market.settle_purchases() == {}  # recorded once; nothing retried forever
        record = await Purchases(buyer.store).get(bytes.fromhex(result.purchase_id))
        assert record is not None and record.state is PurchaseState.LOST and "window closed" in record.detail
        assert await buyer.market.resume() == []
    finally:
        await close(buyer, seller)


class BuyerThatSpendsTheNonceFirst(Buyer):
    """Named fake: before asking for a direct delivery, spends the purchase id as the nonce of a
    zero-value authorization to itself, then hands the seller the real, now unusable, one."""

    async def _receive(self, deal: Deal, request: DeliveryRequest) -> Any:
        if request.authorization is not None:
            spent = await self._chain.authorize_transfer(
                self._wallet, self._wallet.address, 0, deal.purchase_id, deal.quote.deadline_s
            )
            await self._chain.receive_with_authorization(self._wallet, spent)
        return await super()._receive(deal, request)


async def test_a_used_nonce_is_no_proof_of_a_direct_payment(tmp_path: Path, chain: Chain) -> None:
    """Attack "direct payment replay": the seller took the used nonce as proof of payment."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatSpendsTheNonceFirst, payment="direct")
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state in ("refused", "failed") and "already spent on another transfer" in result.detail
        assert (await buyer.store.stats())["total"] == 0
        assert await funds(chain, seller.wallet.address) == 0
        assert await chain.balance(buyer.wallet.address) == 1_000_000
    finally:
        await close(buyer, seller)


async def quote_answer(seller: Side, peer: str, key: Identity, address: str) -> tuple[str, str]:
    body = {"stable_skill_id": "db.pg-upgrade", "version": 1, "buyer_address": address}
    request = seal_envelope(key, KIND_QUOTE_REQUEST, pack_body(body), now_ms=time.time_ns() // 10**6)
    answer = decode_envelope(await seller.market.answer(peer, request.encode()), max_bytes=10**6)
    return answer.kind, str(answer.body_map().get("error", ""))


async def test_fresh_keys_cannot_take_the_quote_slots_of_a_buyer_with_standing(tmp_path: Path, chain: Chain) -> None:
    """Attack "quote-slot denial": 34 fresh keys x 3 requests filled all 100 open-quote slots, and
    honest buyers were refused for 2 minutes, renewable forever."""
    seller, buyer = await trade(tmp_path, chain, limits=SellerLimits())
    try:
        bought = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert bought.state == "completed"
        assert await seller.market.settle_sales() == {"paid": 1}  # the buyer has paid here: standing
        answers = []
        for i in range(34):
            key = Identity.generate()
            for _ in range(3):
                answers.append(await quote_answer(seller, f"flood-{i}", key, "0x" + f"{i:02x}" * 20))
        quoted = sum(kind == KIND_QUOTE for kind, _ in answers)
        assert quoted == SellerLimits().max_open_quotes_unproven  # no wallet proof: the smallest pool
        assert all("buyers new to it" in why for kind, why in answers if kind == KIND_ERROR)
        kind, why = await quote_answer(seller, buyer.host.peer_id, buyer.identity, buyer.wallet.address)
        assert kind == KIND_QUOTE, why  # the buyer with standing is still served
    finally:
        await close(buyer, seller)


@pytest.mark.skipif(ANVIL is None, reason=NO_ANVIL)
async def test_an_unlocked_development_account_is_refused_as_arbiter() -> None:
    """Attack "arbiter by default": `chain deploy` without --arbiter made anvil's account 0 (whose
    key everyone knows) the arbiter."""
    with anvil_process() as url:
        w3 = Web3(Web3.HTTPProvider(url))
        dev_account = w3.eth.accounts[0]
        with pytest.raises(ChainError, match="unlocked development account whose key is public"):
            await Chain.rpc_dev(url, arbiter=dev_account)
        with pytest.raises(ChainError, match="name the escrow's arbiter"):
            await Chain.rpc_dev(url, arbiter="")
        # An escrow someone deployed with such an arbiter anyway: a node refuses to trade on it.
        rogue = Chain._with_our_contracts(w3, dev_account)
        chain = await Chain.rpc(url, rogue.token_address, rogue.escrow_address, dev=True)
        try:
            assert "unlocked development account" in (await Escrow(chain).arbiter_refusal() or "")
        finally:
            await chain.close()
        chosen = await Chain.rpc_dev(url, arbiter=ARBITER.address)
        try:
            assert await Escrow(chosen).arbiter_refusal() is None
        finally:
            await chosen.close()


async def test_the_embedded_chain_may_keep_its_deployer_as_arbiter() -> None:
    chain = await Chain.embedded()
    try:
        assert await Escrow(chain).arbiter_refusal() is None  # it lives in this process alone
    finally:
        await chain.close()


class EscrowThatCommitsForTheBuyer:
    """Named fake, on a third party's side: tries every move on someone else's deal."""

    def __init__(self, escrow: Escrow) -> None:
        self._escrow = escrow

    async def every_move(self, outsider: Any, terms: DealTerms) -> list[str]:
        refused = []
        moves: list[Any] = [
            lambda: self._escrow.release(outsider, terms),
            lambda: self._escrow.commit(outsider, terms, Commitment(b"\1" * 32, b"\2" * 32, b"\3" * 32, b"x")),
            lambda: self._escrow.dispute(outsider, terms),
            lambda: self._escrow.answer(outsider, terms, b"\4" * 32),
            lambda: self._escrow.resolve(outsider, terms, to_seller=True),
        ]
        for move in moves:
            try:
                receipt: Receipt = await move()
            except ChainError as exc:
                refused.append(str(exc))
            else:
                raise AssertionError(f"an outsider moved the deal: {receipt}")
        return refused


async def test_no_third_party_moves_a_deal(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        outsider = type(buyer.wallet).create()
        await chain.fund(outsider.address, 0)
        refused = await EscrowThatCommitsForTheBuyer(Escrow(chain)).every_move(
            outsider, await terms_of(buyer, result.purchase_id)
        )
        assert len(refused) == 5
        assert (await Escrow(chain).status(await terms_of(buyer, result.purchase_id))).state == "locked"
    finally:
        await close(buyer, seller)


async def test_a_deal_whose_step_fails_is_shown_stuck_with_what_comes_next(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        await chain.close()  # the chain goes away under the seller's round
        assert await seller.market.settle_sales() == {"failed": 1}  # recorded on the deal; the round ends well
        (why,) = seller.market.stuck().values()
        assert "ChainError" in why and list(seller.market.stuck()) == [result.purchase_id]
        sale = await Sales(seller.store).get(bytes.fromhex(result.purchase_id))
        assert sale is not None and sale.state is SaleState.DELIVERED
        advice = sale_advice(sale.state, why)
        assert advice.startswith("its last step failed (ChainError") and "doctor" in advice
        assert "commits the delivery on chain" in sale_advice(sale.state)
    finally:
        await close(buyer, seller)


def test_every_state_of_a_deal_says_what_comes_next() -> None:
    assert all(purchase_advice(state) for state in PurchaseState)
    assert all(sale_advice(state) for state in SaleState)
