"""A purchase between two real nodes (libp2p on loopback) on the embedded chain running our escrow."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from crypto.anchors import TrustAnchors
from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from ground.authority import Speaker
from marketplace.chain import ESCROW_RULES, Chain
from marketplace.chain_types import Account, DealTerms
from marketplace.errors import PurchaseError, TransactionReverted
from marketplace.escrow import Escrow
from marketplace.exchange.buyer import Buyer
from marketplace.exchange.deals import Purchases
from marketplace.exchange.market import Market
from marketplace.exchange.protocol import KIND_DELIVERY_REQUEST, PROTOCOL, DeliveryRequest, QuoteRequest, quote_of
from marketplace.exchange.seller import COMMIT_AFTER_S, QUOTE_VALID_MS, Seller, SellerLimits
from marketplace.gossip.kinds import every_kind
from marketplace.gossip.listing import KIND_SKILL_LISTING, LISTING, SkillListing, record_listing
from marketplace.ledger import SkillEarnings, ledger, niche_line, purchase_outcomes_by_seller, sale_defaults_by_buyer
from marketplace.schema import MARKET_SCHEMA
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Scope, SemanticType, content_hash
from p2p.host import HostSettings, P2PHost
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator
from tests.marketplace.conftest import funds

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

SKILL = "Zero-downtime Postgres upgrade: pg_upgrade --link on a replica, then fail over"
PRICE = 25_000  # 0.025 USDC


class TamperingSeller(Seller):
    """Named fake: a seller whose delivery is not the listed skill."""

    async def _deliver(self, buyer: bytes, body: DeliveryRequest) -> bytes:
        held = await self._store.get((await self._store.remember(NewCrystal("something else entirely"))).crystal.id)
        async with self._store.transaction() as db:
            await db.execute("UPDATE sales SET crystal_id = ?", (held.id,))
        return await super()._deliver(buyer, body)


class SilentSeller(Seller):
    """Named fake: a seller that takes the lock and never delivers."""

    async def _deliver(self, buyer: bytes, body: DeliveryRequest) -> bytes:
        raise PurchaseError("out of stock")


class ReplayingSeller(Seller):
    """Named fake: a seller that answers every quote request with its first quote."""

    first: bytes | None = None

    async def _quote(self, buyer: bytes, body: QuoteRequest) -> bytes:
        if self.first is None:
            self.first = await super()._quote(buyer, body)
        return self.first


class MovableClock:
    """The wall clock, moved ``ahead_ms`` forward when a test needs a later time."""

    def __init__(self) -> None:
        self.ahead_ms = 0

    def __call__(self) -> int:
        return _now() + self.ahead_ms


@dataclass
class Side:
    identity: Identity
    wallet: Account
    store: IntakeStore
    host: P2PHost
    market: Market
    clock: MovableClock


async def make_side(
    tmp: Path,
    name: str,
    chain: Chain,
    *,
    seller_class: type[Seller] = Seller,
    buyer_class: type[Buyer] = Buyer,
    payment: str = "escrow",
    limits: SellerLimits | None = None,
    **options: Any,
) -> Side:
    identity = Identity.generate()
    wallet = Account.create()
    store = await IntakeStore.open(tmp / f"{name}.db", HashingEmbedder(), schemas=(MARKET_SCHEMA,))
    host = P2PHost(
        identity,
        MessageValidator(TrustAnchors(), kinds=every_kind()),
        PenaltyBox(),
        HostSettings(degree=3, degree_low=1, degree_high=6),
    )
    clock = MovableClock()
    market = Market(identity, wallet, store, chain, host, payment=payment, limits=limits, clock=clock,
                    buyer_class=buyer_class, seller_class=seller_class, **options)  # fmt: skip
    host.serve(PROTOCOL, market.answer)
    return Side(identity, wallet, store, host, market, clock)


async def trade(
    tmp: Path,
    chain: Chain,
    seller_class: type[Seller] = Seller,
    funds: int = 1_000_000,
    buyer_class: type[Buyer] = Buyer,
    payment: str = "escrow",
    limits: SellerLimits | None = None,
    seller_options: dict[str, Any] | None = None,
    buyer_options: dict[str, Any] | None = None,
) -> tuple[Side, Side]:
    """A seller listing one skill and a funded buyer connected to it; ``seller_options`` go to the
    seller's ``Market`` (its escrow window, deadline bounds)."""
    seller = await make_side(tmp, "seller", chain, seller_class=seller_class, limits=limits, **(seller_options or {}))
    buyer = await make_side(tmp, "buyer", chain, buyer_class=buyer_class, payment=payment, **(buyer_options or {}))
    await chain.fund(seller.wallet.address, 0)
    await chain.fund(buyer.wallet.address, funds)
    await seller.store.remember(NewCrystal(SKILL, semantic_type=SemanticType.SKILL, scope=Scope.SHARED))
    listing = SkillListing("db.pg-upgrade", 1, content_hash(SKILL), "Postgres upgrade", "", ("db",), "db", PRICE,
                           seller.wallet.address, 3, 3, None)  # fmt: skip
    envelope = seal_envelope(seller.identity, KIND_SKILL_LISTING, pack_body(LISTING.body(listing)), now_ms=_now())
    for side in (seller, buyer):  # the seller's own listing, and the buyer's copy from gossip
        await record_listing(side.store, listing, envelope)
    await seller.host.start()
    await buyer.host.start()
    await buyer.host.connect(seller.host.listen_addrs[0])
    return seller, buyer


async def close(*sides: Side) -> None:
    for side in sides:
        await side.host.stop()
        await side.store.close()


def _now() -> int:
    return time.time_ns() // 1_000_000


async def terms_of(buyer: Side, purchase_id: str) -> DealTerms:
    """The escrow terms of one of ``buyer``'s purchases, from the quote it kept."""
    record = await Purchases(buyer.store).get(bytes.fromhex(purchase_id))
    assert record is not None
    return quote_of(record.quote).terms()


async def deal_state(chain: Chain, buyer: Side, purchase_id: str) -> str:
    return (await Escrow(chain).status(await terms_of(buyer, purchase_id))).state


async def test_a_purchase_pays_once_and_delivers_exactly_the_listed_skill(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed" and result.price_micro_usdc == PRICE and result.crystal_id
        bought = await buyer.store.get(result.crystal_id)
        assert (
            bought.text == SKILL
            and bought.origin.value == "peer"
            and bought.source == f"peer:{seller.identity.public_key.hex()}"
        )
        assert await funds(chain, seller.wallet.address) == PRICE
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
        assert await deal_state(chain, buyer, result.purchase_id) == "released"
        async with seller.store.reader().execute("SELECT state FROM sales") as cursor:
            assert [r[0] for r in await cursor.fetchall()] == ["delivered"]
        # The seller sees the release on chain; both ledgers and the buyer's trust evidence follow.
        assert await seller.market.settle_sales() == {"paid": 1}
        assert await seller.market.settle_sales() == {}
        earned = await ledger(seller.store, seller.identity.public_key.hex())
        assert (earned.earned_micro_usdc, earned.sales, earned.unique_buyers, earned.listed_skills) == (PRICE, 1, 1, 1)
        assert earned.top_skills == (SkillEarnings("db.pg-upgrade", 1, PRICE),)
        assert earned.trend[-1].earned_micro_usdc == PRICE and sum(d.earned_micro_usdc for d in earned.trend) == PRICE
        assert niche_line(earned) == (
            "Marketplace: earned 0.025 USDC from 1 sales to 1 buyers (best seller: db.pg-upgrade); "
            "spent 0 USDC on 0 skills; 1 skills listed; 0.025 USDC earned in the last 7 days"
        )
        spent = await ledger(buyer.store, buyer.identity.public_key.hex())
        assert (spent.spent_micro_usdc, spent.purchases, spent.earned_micro_usdc) == (PRICE, 1, 0)
        assert await purchase_outcomes_by_seller(buyer.store) == {seller.identity.public_key: (1, 0)}
    finally:
        await close(buyer, seller)


async def test_insufficient_funds_is_a_clear_error_and_nothing_moves(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, funds=PRICE - 1)
    try:
        with pytest.raises(
            PurchaseError, match="insufficient funds: the skill costs 25000 micro-USDC, the wallet holds 24999"
        ):
            await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
        assert await chain.balance(buyer.wallet.address) == PRICE - 1
        async with seller.store.reader().execute("SELECT state FROM sales") as cursor:
            assert [r[0] for r in await cursor.fetchall()] == []  # a stranger whose wallet cannot pay gets no quote
        async with buyer.store.reader().execute("SELECT count(*) FROM purchases") as cursor:
            assert (await cursor.fetchone()) == (0,)  # nothing to resume
    finally:
        await close(buyer, seller)


@pytest.mark.parametrize("seller_class", [TamperingSeller, SilentSeller])
async def test_a_bad_or_missing_delivery_is_refused_and_refunded_after_the_deadline(
    tmp_path: Path, chain: Chain, seller_class: type[Seller]
) -> None:
    seller, buyer = await trade(tmp_path, chain, seller_class)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "refused" and result.crystal_id is None
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE  # locked, not paid
        assert await buyer.market.settle_purchases() == {}  # not before the deadline
        await chain.advance_time(601)
        assert await buyer.market.settle_purchases() == {"refunded": 1}
        assert await chain.balance(buyer.wallet.address) == 1_000_000 and await funds(chain, seller.wallet.address) == 0
        assert (await buyer.store.stats())["total"] == 0  # nothing wrong was stored
        async with buyer.store.reader().execute("SELECT state, detail FROM purchases") as cursor:
            ((state, detail),) = await cursor.fetchall()
        assert state == "refunded" and detail.startswith("delivery refused")  # why it was refunded is kept
        assert await purchase_outcomes_by_seller(buyer.store) == {seller.identity.public_key: (0, 1)}
        # A delivered sale is settled at once; a quote never delivered is looked at once it lapses
        # (tests/marketplace/test_seller_limits.py).
        assert await seller.market.settle_sales() == ({"refunded": 1} if seller_class is TamperingSeller else {})
        assert (await ledger(seller.store, None)).earned_micro_usdc == 0
    finally:
        await close(buyer, seller)


class EscrowWithoutRelease:
    """Named fake, on the buyer's side: its escrow client never releases (the rest is the real escrow)."""

    def __init__(self, escrow: Escrow) -> None:
        self._escrow = escrow

    def __getattr__(self, name: str) -> Any:
        return getattr(self._escrow, name)

    async def release(self, account: Account, terms: DealTerms) -> None:
        return None


class BuyerThatNeverReleases(Buyer):
    """Named fake: a buyer that keeps the skill and never releases the escrow."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._escrow = EscrowWithoutRelease(self._escrow)  # type: ignore[assignment]


async def test_a_seller_that_delivered_is_paid_without_the_buyers_cooperation(tmp_path: Path, chain: Chain) -> None:
    """Finding 3: release was the buyer's alone, and after the deadline only a refund was possible.
    The seller commits its delivery on chain once the buyer has not released it for a minute, and
    claims the payment after the dispute window; the buyer can no longer refund itself."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed" and result.crystal_id is not None  # it has the skill, unpaid
        assert await seller.market.settle_sales() == {}  # the buyer may still release: not yet
        seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
        assert await seller.market.settle_sales() == {"committed": 1}
        assert await deal_state(chain, buyer, result.purchase_id) == "delivered"
        await chain.advance_time(601)  # past the deadline: a refund is no longer possible
        with pytest.raises(TransactionReverted, match="not refundable"):
            await Escrow(chain).refund(buyer.wallet, await terms_of(buyer, result.purchase_id))
        assert await seller.market.settle_sales() == {}  # the dispute window is still open
        await chain.advance_time(ESCROW_RULES.dispute_window_s)
        assert await seller.market.settle_sales() == {"paid": 1}
        assert await funds(chain, seller.wallet.address) == PRICE
        assert (await ledger(seller.store, None)).earned_micro_usdc == PRICE
    finally:
        await close(buyer, seller)


async def test_a_buyer_that_keeps_the_skill_and_refunds_itself_is_remembered_and_refused(
    tmp_path: Path, chain: Chain
) -> None:
    """A seller that did not commit its delivery by the deadline (it was offline, say) lets the buyer
    refund itself after a valid delivery; the seller marks that sale defaulted, counts it against
    the buyer, and quotes it no more."""
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatNeverReleases)
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed" and result.crystal_id is not None  # it has the skill
        await chain.advance_time(601)
        await Escrow(chain).refund(buyer.wallet, await terms_of(buyer, result.purchase_id))  # straight to the escrow
        assert await chain.balance(buyer.wallet.address) == 1_000_000 and await funds(chain, seller.wallet.address) == 0
        assert await seller.market.settle_sales() == {"defaulted": 1}
        assert await sale_defaults_by_buyer(seller.store) == {buyer.identity.public_key: 1}
        assert (await ledger(seller.store, None)).earned_micro_usdc == 0
        with pytest.raises(PurchaseError, match="no longer sells to you: you took back the payment"):
            await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
        assert await chain.balance(buyer.wallet.address) == 1_000_000  # refused at the quote: nothing locked
    finally:
        await close(buyer, seller)


async def test_a_replayed_quote_is_refused_and_never_paid_twice(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, ReplayingSeller)
    try:
        first = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert first.state == "completed"
        with pytest.raises(PurchaseError, match=r"unusable answer|already used"):
            await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
    finally:
        await close(buyer, seller)


async def test_no_delivery_without_a_locked_payment(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain)
    try:
        request = seal_envelope(
            buyer.identity, KIND_DELIVERY_REQUEST, pack_body({"purchase_id": bytes(32)}), now_ms=_now()
        )
        answer = await buyer.host.request(seller.host.peer_id, PROTOCOL, request.encode())
        assert b"no such purchase" in answer
    finally:
        await close(buyer, seller)


class Killed(Exception):
    """Stands for the process dying at that point."""


class BuyerKilledAfterLock(Buyer):
    """Named fake: the buyer process 'dies' right after its payment is locked (before delivery)."""

    async def _receive(self, deal: Any, request: DeliveryRequest) -> Any:
        raise Killed


class SellerKilledBeforeDelivery(Seller):
    """Named fake: the seller process dies while the delivery request is in flight (the stream resets)."""

    async def _deliver(self, buyer: bytes, body: DeliveryRequest) -> bytes:
        raise ConnectionResetError("killed")  # not an answer: the stream is reset


async def restart(side: Side, chain: Chain, peer_addr: str, *, same_port: bool = False) -> Side:
    """The same node after a restart: same keys, wallet and store file; a new host and market
    (on the port it had when ``same_port``, as a daemon with a configured listen port does)."""
    port = side.host.listen_addrs[0].split("/")[4] if same_port else "0"
    await side.host.stop()
    await side.store.close()
    # what the process left on disk
    store = await IntakeStore.open(side.store.path, HashingEmbedder(), schemas=(MARKET_SCHEMA,))
    settings = HostSettings(listen=(f"/ip4/127.0.0.1/tcp/{port}",), degree=3, degree_low=1, degree_high=6)
    host = P2PHost(side.identity, MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), settings)
    market = Market(side.identity, side.wallet, store, chain, host, clock=side.clock)
    host.serve(PROTOCOL, market.answer)
    await host.start()
    if peer_addr:
        await host.connect(peer_addr)
    return Side(side.identity, side.wallet, store, host, market, side.clock)


async def test_a_buyer_killed_after_paying_resumes_and_never_pays_twice(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerKilledAfterLock)
    try:
        with pytest.raises(Killed):
            await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
        async with buyer.store.reader().execute("SELECT state FROM purchases") as cursor:
            assert [r[0] for r in await cursor.fetchall()] == ["locked"]
        buyer = await restart(buyer, chain, seller.host.listen_addrs[0])
        (resumed,) = await buyer.market.resume()
        assert resumed.state == "completed" and resumed.crystal_id is not None
        assert await funds(chain, seller.wallet.address) == PRICE  # paid exactly once
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
        assert await buyer.market.resume() == []  # nothing left to do
    finally:
        await close(buyer, seller)


async def test_a_seller_killed_before_delivering_delivers_after_its_restart(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, SellerKilledBeforeDelivery)
    try:
        waiting = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert waiting.state == "locked" and "seller unreachable" in waiting.detail
        seller = await restart(seller, chain, "", same_port=True)
        (resumed,) = await buyer.market.resume()  # its old connection is dead: the request redials
        assert resumed.state == "completed", resumed.detail
        assert await funds(chain, seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)


class BuyerKilledBeforeLock(Buyer):
    """Named fake: the buyer process 'dies' after storing the quote, before it locks the payment."""

    async def _continue(self, *args: Any, **kwargs: Any) -> Any:
        raise Killed


async def test_a_quote_that_expired_before_payment_is_never_paid(
    tmp_path: Path, chain: Chain, monkeypatch: pytest.MonkeyPatch
) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerKilledBeforeLock)
    try:
        with pytest.raises(Killed):
            await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
        buyer = await restart(buyer, chain, seller.host.listen_addrs[0])
        buyer.clock.ahead_ms = QUOTE_VALID_MS + 1_000  # the restart came after the quote expired
        (resumed,) = await buyer.market.resume()
        assert resumed.state == "expired" and "nothing was paid" in resumed.detail
        assert await deal_state(chain, buyer, resumed.purchase_id) == "none"
        assert await chain.balance(buyer.wallet.address) == 1_000_000
        assert await buyer.market.resume() == []
    finally:
        await close(buyer, seller)


# --- paying directly (EIP-3009 authorization collected by the seller) ------------------------


async def test_a_direct_payment_is_collected_once_and_the_skill_delivered(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, payment="direct")
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed" and (await buyer.store.get(str(result.crystal_id))).text == SKILL
        assert await funds(chain, seller.wallet.address) == PRICE
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
        assert await deal_state(chain, buyer, result.purchase_id) == "none"  # no escrow involved
        assert (await ledger(seller.store, None)).earned_micro_usdc == PRICE  # paid on delivery, nothing to settle
        assert (await ledger(buyer.store, None)).spent_micro_usdc == PRICE
    finally:
        await close(buyer, seller)


async def test_a_tampered_direct_delivery_is_refused_and_counts_against_the_seller(
    tmp_path: Path, chain: Chain
) -> None:
    seller, buyer = await trade(tmp_path, chain, TamperingSeller, payment="direct")
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "refused" and "paid directly, so there is no refund" in result.detail
        assert (await buyer.store.stats())["total"] == 0
        assert await funds(chain, seller.wallet.address) == PRICE
        assert await purchase_outcomes_by_seller(buyer.store) == {seller.identity.public_key: (0, 1)}
        assert (await ledger(buyer.store, None)).spent_micro_usdc == PRICE
        assert await buyer.market.settle_purchases() == {}  # nothing to refund from: no escrow
    finally:
        await close(buyer, seller)


class SellerCollectsThenDies(Seller):
    """Named fake: the seller collects the payment and dies before its answer leaves."""

    async def _deliver(self, buyer: bytes, body: DeliveryRequest) -> bytes:
        await super()._deliver(buyer, body)
        raise ConnectionResetError("killed")


async def test_a_direct_payment_is_never_collected_twice_across_a_seller_restart(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, SellerCollectsThenDies, payment="direct")
    try:
        waiting = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert waiting.state == "authorized" and "collected at most once" in waiting.detail
        assert await funds(chain, seller.wallet.address) == PRICE  # collected, not delivered
        seller = await restart(seller, chain, "", same_port=True)
        (resumed,) = await buyer.market.resume()  # signs the same nonce again; the seller sees it used
        assert resumed.state == "completed", resumed.detail
        assert await funds(chain, seller.wallet.address) == PRICE
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
    finally:
        await close(buyer, seller)


class CheapBuyer(Buyer):
    """Named fake: a buyer whose payment authorization offers less than the quoted price."""

    async def _receive(self, deal: Any, request: DeliveryRequest) -> Any:
        if (auth := request.authorization) is not None:
            cheaper = await self._chain.authorize_transfer(
                self._wallet, auth.receiver, 1, deal.purchase_id, auth.valid_before
            )
            request = DeliveryRequest(request.purchase_id, cheaper)
        return await super()._receive(deal, request)


async def test_an_authorization_for_less_than_the_quote_gets_nothing(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, buyer_class=CheapBuyer, payment="direct")
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "failed" and "amount differs from the quote" in result.detail
        assert "nothing was paid" in result.detail
        assert await funds(chain, seller.wallet.address) == 0
        assert await chain.balance(buyer.wallet.address) == 1_000_000
    finally:
        await close(buyer, seller)
