"""The buyer's side of a purchase: quote, pay (escrow lock or direct authorization), receive,
check against the signed listing, store, release; resume after a restart; refund what is due.

Every step is written before the next one starts (``deals.Purchases``). A purchase in flight is
never continued twice at once (``resume`` skips it), and a quote that expired before its payment
was locked is never paid.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from crypto.envelope import decode_envelope
from marketplace.catalog.bounties import live_bounties, matches
from marketplace.catalog.listings import listing_envelope
from marketplace.chain import Chain
from marketplace.chain_types import DealStatus
from marketplace.errors import ChainError, PurchaseError, TransactionPending
from marketplace.exchange.arbitration import evidence_of
from marketplace.exchange.deals import UNFINISHED_PURCHASES, PurchaseRecord, Purchases, PurchaseState
from marketplace.exchange.party import Party
from marketplace.exchange.protocol import (
    KIND_DELIVERY,
    KIND_DELIVERY_REQUEST,
    KIND_QUOTE,
    KIND_QUOTE_REQUEST,
    POLICY,
    STALE_DETAIL,
    DeliveryRequest,
    Quote,
    QuoteRequest,
    open_delivery,
    parse_delivery,
    parse_quote,
    quote_of,
    readable_quote,
)
from memory.model import Bounty, NewCrystal, Origin, Scope, SemanticType, SkillVersion, content_hash
from memory.storage.crystal_queries import by_content_hash
from p2p.ingest import peer_source
from p2p.messages import SkillListing, parse_skill_listing

_S = PurchaseState
STANDING_ALLOWANCE_MICRO_USDC = 10_000_000


@dataclass(frozen=True, slots=True)
class PurchaseResult:
    purchase_id: str
    state: str
    crystal_id: str | None
    price_micro_usdc: int
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Deal:
    """One purchase as the buyer carries it: the seller's signed terms and where to reach the seller."""

    quote: Quote
    seller_peer: str
    seller_key: bytes
    listing: SkillListing

    @property
    def purchase_id(self) -> bytes:
        return self.quote.purchase_id

    @property
    def price(self) -> int:
        return self.quote.price_micro_usdc


def _listing_of(quote: Quote) -> SkillListing:
    """What a resumed purchase knows of its listing: the terms the seller signed in its quote."""
    return SkillListing(
        stable_skill_id=quote.stable_skill_id, version=quote.version, content_hash=quote.content_hash,
        title=quote.stable_skill_id, description="", tags=(), category="", price_micro_usdc=quote.price_micro_usdc,
        seller_address=quote.seller_address, executions=0, successes=0, content=None,
    )  # fmt: skip


class Buyer:
    def __init__(self, party: Party, *, payment: str) -> None:
        self._identity = party.identity
        self._wallet = party.wallet
        self._store = party.store
        self._chain: Chain = party.chain
        self._messenger = party.messenger
        self._now_ms = party.clock
        self._bounds = party.bounds
        self._payment = payment
        self._purchases = Purchases(party.store, party.clock)
        self._escrow = party.escrow
        #: A first lock's permit allows this much, so later locks need no permit (only this
        #: node's own locks can draw on it: the escrow takes from the buyer that sends the lock).
        self._standing_allowance = STANDING_ALLOWANCE_MICRO_USDC
        self._in_flight: set[bytes] = set()

    async def buy(
        self, seller_peer: str, seller_key: bytes, stable_skill_id: str, *, max_price: int | None = None
    ) -> PurchaseResult:
        wire = await listing_envelope(self._store, seller_key.hex(), stable_skill_id)
        if wire is None:
            raise PurchaseError(f"no live listing of {stable_skill_id} from that seller")
        listing = parse_skill_listing(decode_envelope(wire, max_bytes=POLICY.max_bytes).body_map())
        if max_price is not None and listing.price_micro_usdc > max_price:
            raise PurchaseError(f"the listing asks {listing.price_micro_usdc} micro-USDC, more than {max_price}")
        request = self._messenger.seal(
            KIND_QUOTE_REQUEST, QuoteRequest(stable_skill_id, listing.version, self._wallet.address).body()
        )
        # The chain reads (on the chain's thread) overlap the quote's round trip; a buyer that cannot
        # pay has asked for a quote, nothing more (the seller's quote lapses).
        balance, permit_nonce, chain_now, (quote_wire, quote_body) = await asyncio.gather(
            self._chain.balance(self._wallet.address),
            self._chain.permit_nonce(self._wallet.address),
            self._chain.timestamp(),
            self._messenger.ask(seller_peer, request, KIND_QUOTE, seller_key),
        )
        if balance < listing.price_micro_usdc:
            raise PurchaseError(
                f"insufficient funds: the skill costs {listing.price_micro_usdc} micro-USDC, the wallet holds {balance}"
            )
        quote = parse_quote(quote_body)
        self._check_quote(quote, listing)
        if (why := self._bounds.refusal(quote.deadline_s, chain_now)) is not None:
            raise PurchaseError(f"quote refused: {why}; nothing was paid")
        if await self._purchases.get(quote.purchase_id) is not None:
            raise PurchaseError("quote refused: its purchase id was already used (a replayed quote)")
        await self._purchases.add(quote.purchase_id, seller_key, seller_peer, quote_wire, self._payment)
        self._in_flight.add(quote.purchase_id)
        try:
            return await self._continue(Deal(quote, seller_peer, seller_key, listing), fresh=True,
                                        permit_nonce=permit_nonce)  # fmt: skip
        finally:
            self._in_flight.discard(quote.purchase_id)

    async def resume(self) -> list[PurchaseResult]:
        """After a restart: carry every purchase left quoted or locked to its end, and refund what is due."""
        results = []
        for record in await self._purchases.in_states(*UNFINISHED_PURCHASES, _S.FAILED):
            if record.purchase_id in self._in_flight:
                continue  # a buy in this process is carrying it right now
            quote = await self._readable(record)
            if quote is None:
                continue
            if record.state is _S.FAILED and (
                record.payment != "escrow" or (await self._escrow.status(quote.terms())).state == "none"
            ):
                continue  # failed indeed: nothing of it is on the chain
            self._in_flight.add(record.purchase_id)
            try:
                results.append(await self._continue(Deal(quote, record.seller_peer, record.seller, _listing_of(quote))))
            finally:
                self._in_flight.discard(record.purchase_id)
        await self.refund_due()
        return results

    async def _readable(self, record: PurchaseRecord) -> Quote | None:
        """The purchase's quote; None once a quote in an earlier release's form has set it aside."""
        quote = readable_quote(record.quote)
        if quote is None:
            await self._purchases.move(record.purchase_id, _S.STALE, STALE_DETAIL)
        return quote

    async def refund_due(self) -> list[str]:
        """Settle every escrowed purchase still open here from what the chain says: refund what had no
        delivery committed by its deadline, dispute a committed delivery this node refused, record
        what the seller was paid and what came back. Returns the ids refunded."""
        pending = await self._purchases.in_states(_S.REFUSED, _S.LOCKED, _S.DISPUTED, payment="escrow")
        done = []
        now = await self._chain.timestamp()
        for record in pending:
            quote = await self._readable(record)
            if quote is None:
                continue
            terms = quote.terms()
            status = await self._escrow.status(terms)
            if status.state == "locked" and now >= terms.deadline:
                await self._escrow.refund(self._wallet, terms)
                status = await self._escrow.status(terms)
            if status.state == "delivered" and record.state is _S.REFUSED:
                # The seller put its key on chain for what this node refused: contest it before the window closes.
                await self._escrow.dispute(self._wallet, terms)
                await self._purchases.move(record.purchase_id, _S.DISPUTED, keep_detail=True)
            elif status.state == "refunded":
                await self._purchases.move(record.purchase_id, _S.REFUNDED, keep_detail=True)
                done.append(record.purchase_id.hex())
            elif status.state == "released" and record.state is not _S.LOCKED:
                await self._purchases.move(
                    record.purchase_id,
                    _S.LOST,
                    "the escrow paid the seller: the arbiter decided so, or no dispute came in time",
                )
        return done

    async def dispute(self, purchase_id: bytes) -> PurchaseResult:
        """Contest a committed delivery of this node's purchase (the arbiter decides)."""
        record = await self._purchases.get(purchase_id)
        if record is None:
            raise PurchaseError(f"no purchase {purchase_id.hex()} here")
        if record.state is _S.COMPLETED:
            raise PurchaseError("this node received exactly the listed skill: there is nothing to dispute")
        quote = quote_of(record.quote)
        status = await self._escrow.status(quote.terms())
        if status.state != "delivered":
            raise PurchaseError(
                f"nothing to dispute: the escrow says {status.state} (a dispute contests a committed delivery)"
            )
        await self._escrow.dispute(self._wallet, quote.terms())
        await self._purchases.move(purchase_id, _S.DISPUTED, "disputed: the arbiter decides", keep_detail=False)
        return PurchaseResult(purchase_id.hex(), str(_S.DISPUTED), record.crystal_id, quote.price_micro_usdc)

    async def evidence(self, purchase_id: bytes) -> bytes | None:
        """The evidence of a purchase: the seller's signed quote and delivery, as received; None if
        this node bought no such thing or received no delivery for it."""
        record = await self._purchases.get(purchase_id)
        if record is None or record.delivery is None:
            return None
        return evidence_of(record.quote, record.delivery)

    async def _continue(self, deal: Deal, *, fresh: bool = False, permit_nonce: int | None = None) -> PurchaseResult:
        """Carry a purchase on from wherever it stands. ``fresh``: quoted just now by this process, so
        nothing was paid for it yet (a resumed purchase reads the chain first)."""
        record = await self._purchases.get(deal.purchase_id)
        if (record.payment if record else self._payment) == "direct":
            return await self._continue_direct(deal, fresh=fresh)
        terms = deal.quote.terms()
        # A purchase id the escrow already holds makes the lock revert: a fresh one skips the read.
        status = DealStatus("none") if fresh else await self._escrow.status(terms)
        if status.state in ("released", "refunded"):
            # A restart after the last chain step but before it was written down: settle the record.
            crystal = await self._crystal_with(deal.listing.content_hash) if status.state == "released" else None
            return await self._end(deal, _S.COMPLETED if status.state == "released" else _S.REFUNDED, crystal=crystal)
        if status.state == "disputed":
            return await self._end(deal, _S.DISPUTED, "disputed: the arbiter decides")
        if status.state == "none":  # the escrow takes a purchase id once: a resumed purchase never pays twice
            if deal.quote.expires_ms < self._now_ms():
                why = "the quote expired before the payment was locked; nothing was paid"
                return await self._end(deal, _S.EXPIRED, why)
            try:
                await self._escrow.lock(
                    self._wallet, terms, permit_value=self._standing_allowance, permit_nonce=permit_nonce
                )
            except TransactionPending as exc:  # maybe locked, maybe not: resume asks the chain
                return await self._end(deal, _S.PENDING, f"{exc}; resume finishes or refunds it")
            except ChainError as exc:
                await self._purchases.move(deal.purchase_id, _S.FAILED, str(exc))
                raise PurchaseError(f"payment not made: {exc}") from None
        await self._purchases.move(deal.purchase_id, _S.LOCKED)
        outcome = await self._receive(deal, DeliveryRequest(deal.purchase_id))
        if outcome == "unreachable":
            # The seller may be restarting: the payment stays locked and ``resume`` asks again;
            # if no delivery is committed by the deadline, ``refund_due`` takes the money back.
            return await self._end(
                deal, _S.LOCKED, "seller unreachable; resume retries, the escrow refunds after the deadline"
            )
        if isinstance(outcome, str):
            return await self._end(
                deal, _S.REFUSED, f"delivery refused: {outcome}; refunded after the deadline, disputed if committed"
            )
        text, delivery = outcome
        crystal = await self._store_skill(text, deal.listing, deal.seller_key)
        await self._purchases.keep_delivery(deal.purchase_id, delivery)  # evidence, kept first
        await self._escrow.release(self._wallet, terms)
        return await self._end(deal, _S.COMPLETED, crystal=crystal)

    async def _continue_direct(self, deal: Deal, *, fresh: bool) -> PurchaseResult:
        paid = False if fresh else await self._chain.authorization_used(self._wallet.address, deal.purchase_id)
        if not paid and deal.quote.expires_ms < self._now_ms():
            return await self._end(
                deal, _S.EXPIRED, "the quote expired before the payment was authorized; nothing was paid"
            )
        # Signing again on resume gives an authorization for the same nonce: it can be collected once.
        auth = await self._chain.authorize_transfer(
            self._wallet, deal.quote.seller_address, deal.price, deal.purchase_id, deal.quote.deadline_s
        )
        await self._purchases.move(deal.purchase_id, _S.AUTHORIZED)
        outcome = await self._receive(deal, DeliveryRequest(deal.purchase_id, auth))
        if outcome == "unreachable":
            return await self._end(
                deal, _S.AUTHORIZED, "seller unreachable; resume retries (the authorization is collected at most once)"
            )
        if isinstance(outcome, str):
            if await self._chain.authorization_used(self._wallet.address, deal.purchase_id):
                return await self._end(
                    deal, _S.REFUSED, f"delivery refused: {outcome}; paid directly, so there is no refund"
                )
            return await self._end(deal, _S.FAILED, f"delivery refused: {outcome}; nothing was paid")
        crystal = await self._store_skill(outcome[0], deal.listing, deal.seller_key)
        return await self._end(deal, _S.COMPLETED, crystal=crystal)

    async def _end(
        self, deal: Deal, state: PurchaseState, detail: str = "", *, crystal: str | None = None
    ) -> PurchaseResult:
        """Write where the purchase stands now and report it."""
        await self._purchases.move(deal.purchase_id, state, detail, crystal_id=crystal)
        return PurchaseResult(deal.purchase_id.hex(), str(state), crystal, deal.price, detail)

    async def _receive(self, deal: Deal, request: DeliveryRequest) -> tuple[str, bytes] | str:
        """Ask for the delivery and check it: ``(skill text, the signed delivery)``, ``"unreachable"``,
        or why it was refused (the signed delivery is kept then too, as evidence)."""
        try:
            sealed = self._messenger.seal(KIND_DELIVERY_REQUEST, request.body())
            wire, body = await self._messenger.ask(deal.seller_peer, sealed, KIND_DELIVERY, deal.seller_key)
        except (TimeoutError, ConnectionError):
            return "unreachable"
        except PurchaseError as exc:
            return str(exc)
        try:
            delivery = parse_delivery(body)
            if delivery.purchase_id != deal.purchase_id:
                raise PurchaseError("the delivery is for another purchase")
            text = open_delivery(delivery.ciphertext, delivery.key)
            if content_hash(text) != deal.listing.content_hash:
                raise PurchaseError("the delivered skill does not match the signed listing's content hash")
        except PurchaseError as exc:
            await self._purchases.keep_delivery(deal.purchase_id, wire)  # what the seller signed
            return str(exc)
        return text, wire

    def _check_quote(self, quote: Quote, listing: SkillListing) -> None:
        expected = {
            "stable_skill_id": (quote.stable_skill_id, listing.stable_skill_id),
            "version": (quote.version, listing.version),
            "content_hash": (quote.content_hash, listing.content_hash),
            "price_micro_usdc": (quote.price_micro_usdc, listing.price_micro_usdc),
            "seller_address": (quote.seller_address, listing.seller_address),
            "buyer": (quote.buyer, self._identity.public_key),
            "buyer_address": (quote.buyer_address, self._wallet.address),
        }
        for name, (given, wanted) in expected.items():
            if given != wanted:
                raise PurchaseError(f"quote refused: {name} differs from the listing or from this buyer")
        if quote.expires_ms < self._now_ms():
            raise PurchaseError("quote refused: it has expired")

    async def _crystal_with(self, chash: str) -> str | None:
        crystal = await by_content_hash(self._store, chash)
        return crystal.id if crystal else None

    async def _store_skill(self, text: str, listing: SkillListing, seller_key: bytes) -> str:
        source = peer_source(seller_key)
        me = self._identity.public_key.hex()
        mine = [  # a bought skill that answers one of this node's own bounties carries it
            b
            for b in await live_bounties(self._store, self._now_ms(), author=me)
            if matches(b, text=f"{listing.title} {text}", tags=listing.tags, category=listing.category)
        ]
        remembered = await self._store.remember(
            NewCrystal(
                text,
                semantic_type=SemanticType.SKILL,
                origin=Origin.PEER,
                scope=Scope.PRIVATE,
                source=source,
                skill=SkillVersion(
                    listing.stable_skill_id, listing.version, tags=listing.tags, category=listing.category or None
                ),
                actor=source,
                context=listing.title,
                bounty=Bounty(mine[0].bounty_id, mine[0].reward_micro_usdc) if mine else None,
            )
        )
        return remembered.crystal.id
