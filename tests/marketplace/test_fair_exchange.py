"""Issue 15: neither side of a purchase can cheat the other, and no payment is stranded.
Real nodes (libp2p on loopback) on the embedded chain and on anvil."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from crypto.envelope import pack_body, seal_envelope
from ground.authority import Speaker
from marketplace.chain import Chain
from marketplace.chain_types import Account, DealTerms, Receipt
from marketplace.errors import PurchaseError
from marketplace.escrow import Escrow
from marketplace.exchange.buyer import Buyer
from marketplace.exchange.deals import Purchases, PurchaseState, Sales, SaleState
from marketplace.exchange.protocol import KIND_QUOTE
from marketplace.exchange.seller import COMMIT_AFTER_S
from marketplace.limits import DeadlineBounds
from memory.model import content_hash
from memory.storage.crystal_queries import by_content_hash
from tests.marketplace.conftest import funds
from tests.marketplace.test_purchase import PRICE, SKILL, BuyerThatNeverReleases, close, deal_state, terms_of, trade

pytestmark = pytest.mark.slow  # real hosts and chains


class EscrowWithNearerLocks:
    """Named fake, on the buyer's side: it locks with a deadline 200 s nearer than the quote said
    (still within the escrow's bounds; the rest is the real escrow)."""

    def __init__(self, escrow: Escrow) -> None:
        self._escrow = escrow

    def __getattr__(self, name: str) -> Any:
        return getattr(self._escrow, name)

    async def lock(self, account: Account, terms: DealTerms, **kwargs: Any) -> Receipt:
        return await self._escrow.lock(account, replace(terms, deadline=terms.deadline - 200), **kwargs)


class BuyerThatLocksShort(Buyer):
    """Named fake: a buyer that would take the skill and refund itself before the quoted deadline."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._escrow = EscrowWithNearerLocks(self._escrow)  # type: ignore[assignment]


async def test_a_lock_nearer_than_the_quoted_deadline_gets_nothing_delivered(tmp_path: Path, chain: Chain) -> None:
    """Finding 1: the seller checked the lock's amount, seller and buyer, not its deadline."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatLocksShort)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "refused" and result.crystal_id is None
        assert "no open deal on the quoted terms, deadline included: it says none" in result.detail
        assert (await buyer.store.stats())["total"] == 0  # the skill never reached the buyer
        await chain.advance_time(401)  # the nearer deadline passed: the cheat gets back only its own money
        nearer = replace(
            await terms_of(buyer, result.purchase_id),
            deadline=(await terms_of(buyer, result.purchase_id)).deadline - 200,
        )
        await Escrow(chain).refund(buyer.wallet, nearer)
        assert await chain.balance(buyer.wallet.address) == 1_000_000
        assert await funds(chain, seller.wallet.address) == 0
    finally:
        await close(buyer, seller)


async def test_a_quote_locking_money_for_millennia_is_refused_before_anything_is_paid(
    tmp_path: Path, chain: Chain
) -> None:
    """Finding 2: the buyer never checked the quote's deadline; a seller quoting 10^12 s froze its
    money for 31,709 years."""
    # What that seller ran: bounds past what a config file accepts (model_construct skips the checks).
    bounds = DeadlineBounds.model_construct(min_delivery_window_s=300, max_lock_s=10**13)
    far = {"escrow_window_s": 10**12, "bounds": bounds}
    seller, buyer = await trade(tmp_path, chain, seller_options=far)
    try:
        with pytest.raises(
            PurchaseError, match=r"quote refused: its escrow deadline is \d+ s away, more than the 86400"
        ):
            await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
        assert await chain.balance(buyer.wallet.address) == 1_000_000
        assert await buyer.market.resume() == []  # nothing was recorded as under way
    finally:
        await close(buyer, seller)


async def test_a_slow_receipt_leaves_the_purchase_pending_and_resume_finishes_it(
    tmp_path: Path, anvil_client: Chain
) -> None:
    """Finding 4: a receipt slower than the wait was stored `failed` (after a misleading revert
    reason) while the escrow said `locked`, and nothing ever looked at it again."""
    chain = anvil_client
    seller, buyer = await trade(tmp_path, chain)
    try:
        chain.receipt_timeout_s = 1
        await chain.set_automine(False)
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "pending" and "outcome is not known yet" in result.detail
        assert "revert" not in result.detail
        await chain.set_automine(True)
        await chain.mine()
        assert await deal_state(chain, buyer, result.purchase_id) == "locked"
        (resumed,) = await buyer.market.resume()
        assert resumed.state == "completed" and resumed.crystal_id is not None
        assert await funds(chain, seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)


async def test_a_purchase_an_earlier_release_stored_failed_is_carried_on_when_its_lock_exists(
    tmp_path: Path, anvil_client: Chain
) -> None:
    chain = anvil_client
    seller, buyer = await trade(tmp_path, chain)
    try:
        chain.receipt_timeout_s = 1
        await chain.set_automine(False)
        await buyer.market.buy(seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON)
        await chain.set_automine(True)
        await chain.mine()
        async with buyer.store.transaction() as db:  # as the release before `pending` left it
            await db.execute("UPDATE purchases SET state = 'failed', detail = 'transaction reverted: ...'")
        (resumed,) = await buyer.market.resume()
        assert resumed.state == "completed"
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
        assert await buyer.market.resume() == []
    finally:
        await close(buyer, seller)


async def test_a_seller_withdraws_its_paid_sales_once_they_reach_the_threshold(tmp_path: Path, chain: Chain) -> None:
    """Released sales are owed by the escrow until the seller withdraws: below the node's threshold
    nothing is sent; at it, everything owed moves to the wallet in one transaction."""
    seller, buyer = await trade(tmp_path, chain)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed" and await seller.market.owed() == PRICE
        sent = chain.sent.get(seller.wallet.address)
        assert await seller.market.withdraw(at_least=PRICE + 1) == 0
        assert chain.sent.get(seller.wallet.address) == sent  # no transaction below the threshold
        assert await seller.market.withdraw(at_least=PRICE) == PRICE
        assert (await seller.market.owed(), await chain.balance(seller.wallet.address)) == (0, PRICE)
        with pytest.raises(PurchaseError, match=r"the escrow owes this node 0\.000000 USDC"):
            await seller.market.withdraw(1)
    finally:
        await close(seller, buyer)


async def test_a_deal_an_earlier_release_left_unfinished_is_set_aside_and_stops_no_other(
    tmp_path: Path, chain: Chain
) -> None:
    """A quote kept in an earlier release's form (a seller-chosen purchase id, no nonce, for the
    escrow of its day) made every market round raise at that row: no other deal moved on."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        old_id = os.urandom(32)
        old_body = {"purchase_id": old_id, "stable_skill_id": "db.pg-upgrade", "version": 1, "deadline_s": 1}
        old_quote = seal_envelope(seller.identity, KIND_QUOTE, pack_body(old_body), now_ms=seller.clock()).encode()
        purchases, sales = Purchases(buyer.store), Sales(seller.store, seller.clock)
        await purchases.add(old_id, seller.identity.public_key, seller.host.peer_id, old_quote, "escrow")
        await purchases.move(old_id, PurchaseState.LOCKED)
        skill = await by_content_hash(seller.store, content_hash(SKILL))
        assert skill is not None
        await sales.add_quote(old_id, buyer.identity.public_key, skill.id, old_quote)
        await sales.move(old_id, SaleState.DELIVERED, delivery_key=b"\1" * 32)

        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed"  # the new deal: delivered, not released
        assert await buyer.market.resume() == []  # no error: the old one is set aside
        old = await purchases.get(old_id)
        assert old is not None and old.state is PurchaseState.STALE and "earlier release" in old.detail
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"stale": 1, "committed": 1}  # the new one goes on
        assert await seller.market.settle_sales() == {}  # set aside once, never read again
    finally:
        await close(seller, buyer)
