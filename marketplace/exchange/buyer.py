"""The buyer's side of a purchase: quote, pay (escrow lock or direct authorization), receive,
check against the signed listing, store, release; resume after a restart; settle what the chain
moved (``settle``): refund what had nothing committed by its deadline, take a skill the seller
committed on chain when its delivery never arrived, and dispute a commitment that is not the
listed skill while the window is open.

Every step is written before the next one starts (``deals.Purchases``). A purchase in flight is
never continued twice at once (``resume`` skips it), and a quote that expired before its payment
was locked is never paid. One purchase's failure is kept in ``stuck`` and stops no other.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from crypto.envelope import decode_envelope
from crypto.errors import SealedDataTampered
from ground import failpoints
from ground.authority import Speaker
from marketplace.catalog.bounties import live_bounties, matches
from marketplace.catalog.listings import listing_envelope
from marketplace.chain import Chain
from marketplace.chain_types import DealState, DealStatus, DealTerms
from marketplace.errors import ChainError, PurchaseError, TransactionPending
from marketplace.exchange.deals import UNFINISHED_PURCHASES, PurchaseRecord, Purchases, PurchaseState
from marketplace.exchange.party import SETTLEMENT_ERRORS, Party, StuckDeals, final_unconfirmed, lock_unconfirmed
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
    UnusableContent,
    box_nonce,
    nonce_of,
    parse_delivery,
    parse_quote,
    quote_of,
    readable_quote,
    unstorable,
)
from marketplace.exchange.spending import Spending
from marketplace.exchange.wallet_proof import wallet_proof
from marketplace.gossip.listing import LISTING, SkillListing
from marketplace.gossip.peer_content import hold_reason, peer_source
from marketplace.gossip.skill_bytes import held_skill, skill_hash
from marketplace.limits import SpendLimits
from memory.errors import MemoryError_
from memory.model import Bounty, NewCrystal, Origin, Scope, SemanticType, SkillVersion

_S = PurchaseState
_D = DealState
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
    def __init__(self, party: Party, *, payment: str, spend_limits: SpendLimits | None = None) -> None:
        self._identity = party.identity
        self._wallet = party.wallet
        self._store = party.store
        self._chain: Chain = party.chain
        self._messenger = party.messenger
        self._now_ms = party.clock
        self._bounds = party.bounds
        self._standing = party.standing
        self._payment = payment
        self._purchases = Purchases(party.store, party.clock)
        self.spending = Spending(self._purchases, spend_limits or SpendLimits(), party.clock)
        self._escrow = party.escrow
        #: A first lock's permit allows this much, so later locks need no permit (only this
        #: node's own locks can draw on it: the escrow takes from the buyer that sends the lock).
        self._standing_allowance = STANDING_ALLOWANCE_MICRO_USDC
        self._in_flight: set[bytes] = set()
        self.stuck = StuckDeals()

    async def buy(
        self, seller_peer: str, seller_key: bytes, stable_skill_id: str, *, max_price: int | None = None,
        speaker: Speaker,
    ) -> PurchaseResult:  # fmt: skip
        """Buy a listed skill for ``speaker``, who asked for it: the ceiling, ``max_price`` and the
        agent's daily budget are checked first (``spending``), and the quote is held to the same cap."""
        wire = await listing_envelope(self._store, seller_key.hex(), stable_skill_id)
        if wire is None:
            raise PurchaseError(f"no live listing of {stable_skill_id} from that seller")
        listing = LISTING.parse(decode_envelope(wire, max_bytes=POLICY.max_bytes).body_map())
        price = listing.price_micro_usdc
        async with self.spending.allow(speaker, skill=stable_skill_id, price=price, max_price=max_price):
            # Priced as listed: ``_check_quote`` refuses a quote at any other price.
            quote, seller_wire, permit_nonce = await self._quoted(seller_peer, seller_key, listing)
            await self._purchases.add(quote.purchase_id, seller_key, seller_peer, seller_wire, self._payment,
                                      speaker=speaker, price_micro_usdc=quote.price_micro_usdc)  # fmt: skip
        self._in_flight.add(quote.purchase_id)
        try:
            return await self._continue(Deal(quote, seller_peer, seller_key, listing), fresh=True,
                                        permit_nonce=permit_nonce)  # fmt: skip
        finally:
            self._in_flight.discard(quote.purchase_id)

    async def _quoted(self, seller_peer: str, seller_key: bytes, listing: SkillListing) -> tuple[Quote, bytes, int]:
        """The seller's quote for ``listing``, checked (and its signed envelope), and the wallet's permit nonce."""
        proof = wallet_proof(self._wallet.private_key, self._identity.public_key)
        request = self._messenger.seal(
            KIND_QUOTE_REQUEST,
            QuoteRequest(listing.stable_skill_id, listing.version, self._wallet.address, proof).body(),
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
        return quote, quote_wire, permit_nonce

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
            except SETTLEMENT_ERRORS as exc:  # one purchase stops no other
                self.stuck.note({}, record.purchase_id, record.state, None, exc)
            finally:
                self._in_flight.discard(record.purchase_id)
        await self.settle()
        return results

    async def _readable(self, record: PurchaseRecord) -> Quote | None:
        """The purchase's quote; None once a quote in an earlier release's form has set it aside."""
        quote = readable_quote(record.quote)
        if quote is None:
            await self._purchases.move(record.purchase_id, _S.STALE, STALE_DETAIL)
        return quote

    async def settle(self) -> dict[str, int]:
        """Carry every escrowed purchase still open here on from what the chain says; returns counts
        by new state. A locked deal past its deadline with nothing committed is refunded. A committed
        delivery is read from the chain and opened: the listed skill is stored and the deal released
        (the seller is paid now, as it would be after the window), anything else is disputed while
        the window is open. A dispute the seller left unanswered for the arbitration window is
        refunded."""
        pending = await self._purchases.in_states(_S.REFUSED, _S.LOCKED, _S.DISPUTED, payment="escrow")
        changed: dict[str, int] = {}
        for record in pending:
            if record.purchase_id in self._in_flight:
                continue
            try:
                quote = await self._readable(record)
                new_state = _S.STALE if quote is None else await self._settle_one(record, quote)
            except SETTLEMENT_ERRORS as exc:
                self.stuck.note(changed, record.purchase_id, record.state, None, exc)
                continue
            self.stuck.note(changed, record.purchase_id, record.state, new_state)
        return changed

    async def _settle_one(self, record: PurchaseRecord, quote: Quote) -> PurchaseState | None:
        terms = quote.terms()
        pid = record.purchase_id
        status = await self._escrow.status(terms)
        now = await self._chain.timestamp()
        if status.state is _D.LOCKED and now >= terms.deadline:
            await self._escrow.refund(self._wallet, terms)
            status = await self._escrow.status(terms)
        if await final_unconfirmed(self._chain, self._escrow, terms, status):
            return None  # moved once confirmed: a reorg could still undo it
        if status.state is _D.REFUNDED:
            await self._purchases.move(pid, _S.REFUNDED, keep_detail=True)
            return _S.REFUNDED
        if status.state in (_D.DELIVERED, _D.RELEASED):
            text = await self._committed_skill(terms)
            if text is not None:  # the listed skill, from the chain: whether or not its message came
                crystal = await self._crystal_with(quote) or await self._store_skill(
                    text, _listing_of(quote), record.seller
                )
                if status.state is _D.DELIVERED:
                    await self._escrow.release(self._wallet, terms)
                await self._purchases.move(
                    pid, _S.COMPLETED, "received from the seller's commitment on chain", crystal_id=crystal
                )
                return _S.COMPLETED
        if status.state is _D.DELIVERED:
            rules = await self._escrow.rules()
            if now < status.since + rules.dispute_window_s:
                await self._escrow.dispute(self._wallet, terms)
                await self._purchases.move(
                    pid, _S.DISPUTED, "the seller committed a delivery that is not the listed skill: disputed; "
                    "the seller must answer, then the arbiter decides from the chain",
                )  # fmt: skip
                return _S.DISPUTED
            await self._purchases.move(
                pid, _S.LOST, "the seller committed a delivery that is not the listed skill, and the dispute window "
                "closed before this node could contest it (it was not running)",
            )  # fmt: skip
            return _S.LOST
        if status.state in (_D.DISPUTED, _D.ANSWERED):
            rules = await self._escrow.rules()
            undecided = now >= status.since + rules.arbitration_window_s  # from the dispute (or answer)
            if status.state is _D.DISPUTED and undecided:  # the seller never answered: the money comes back
                await self._escrow.refund(self._wallet, terms)
                await self._purchases.move(pid, _S.REFUNDED, "the seller never answered the dispute: refunded")
                return _S.REFUNDED
            if record.state is not _S.DISPUTED:
                await self._purchases.move(pid, _S.DISPUTED, "disputed: the arbiter decides from the chain")
                return _S.DISPUTED
            return None
        if status.state is _D.RELEASED:
            await self._purchases.move(
                pid, _S.LOST, "the escrow paid the seller (the arbiter decided so, or the arbitration window passed), "
                "and what it committed is not the listed skill",
            )  # fmt: skip
            return _S.LOST
        return None

    async def _committed_skill(self, terms: DealTerms) -> str | None:
        """The listed skill as the seller committed it on chain, opened with this node's key; None if
        nothing is committed or what is committed is not the listed skill sealed to this node."""
        commitment = await self._escrow.commitment(terms.purchase_id)
        if commitment is None or commitment.recipient != self._identity.public_key:
            return None
        if nonce_of(commitment.salt, commitment.recipient) != terms.nonce:
            return None
        try:
            data = self._identity.open_box(commitment.ephemeral, box_nonce(terms.purchase_id), commitment.sealed)
            text = data.decode("utf-8")
        except (SealedDataTampered, UnicodeDecodeError):
            return None
        if skill_hash(text) != terms.content_hash.hex() or unstorable(text) is not None:
            return None
        return text

    async def dispute(self, purchase_id: bytes) -> PurchaseResult:
        """Contest a committed delivery of this node's purchase (the arbiter decides from the chain)."""
        record = await self._purchases.get(purchase_id)
        if record is None:
            raise PurchaseError(f"no purchase {purchase_id.hex()} here")
        if record.state is _S.COMPLETED:
            raise PurchaseError("this node received exactly the listed skill: there is nothing to dispute")
        quote = quote_of(record.quote)
        status = await self._escrow.status(quote.terms())
        if status.state is not _D.DELIVERED:
            raise PurchaseError(
                f"nothing to dispute: the escrow says {status.state} (a dispute contests a committed delivery)"
            )
        if await self._committed_skill(quote.terms()) is not None:
            raise PurchaseError(
                "nothing to dispute: the delivery the seller committed on chain opens to exactly the listed skill "
                "(the next market round stores it)"
            )
        await self._escrow.dispute(self._wallet, quote.terms())
        await self._purchases.move(purchase_id, _S.DISPUTED, "disputed: the arbiter decides", keep_detail=False)
        return PurchaseResult(purchase_id.hex(), str(_S.DISPUTED), record.crystal_id, quote.price_micro_usdc)

    async def _continue(self, deal: Deal, *, fresh: bool = False, permit_nonce: int | None = None) -> PurchaseResult:
        """Carry a purchase on from wherever it stands. ``fresh``: quoted just now by this process, so
        nothing was paid for it yet (a resumed purchase reads the chain first)."""
        record = await self._purchases.get(deal.purchase_id)
        if (record.payment if record else self._payment) == "direct":
            return await self._continue_direct(deal, fresh=fresh)
        terms = deal.quote.terms()
        # A purchase id the escrow already holds makes the lock revert: a fresh one skips the read.
        status = DealStatus(_D.NONE) if fresh else await self._escrow.status(terms)
        if await final_unconfirmed(self._chain, self._escrow, terms, status):
            why = "the escrow's last move is not confirmed yet; the next round records it"
            return PurchaseResult(
                deal.purchase_id.hex(), str(record.state if record else _S.QUOTED), None, deal.price, why
            )
        if status.state is _D.REFUNDED:
            return await self._end(deal, _S.REFUNDED)
        if status.state is _D.RELEASED:
            # A restart after the last chain step but before it was written down: settle the record.
            crystal = await self._crystal_with(deal.listing)
            if crystal is None and (text := await self._committed_skill(terms)) is not None:
                crystal = await self._store_skill(text, deal.listing, deal.seller_key)
            if crystal is None:
                why = "the escrow paid the seller and this node holds no delivery of the listed skill"
                return await self._end(deal, _S.LOST, why)
            return await self._end(deal, _S.COMPLETED, crystal=crystal)
        if status.state in (_D.DISPUTED, _D.ANSWERED):
            return await self._end(deal, _S.DISPUTED, "disputed: the arbiter decides")
        if status.state is _D.NONE:  # the escrow takes a purchase id once: a resumed purchase never pays twice
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
            failpoints.check("market:after-lock")  # paid on chain, not yet written down here
        await self._purchases.move(deal.purchase_id, _S.LOCKED)
        if await lock_unconfirmed(self._chain, self._escrow, terms):
            # The seller delivers only against a lock a reorg can no longer undo: ask once it is that deep.
            why = f"locked; the delivery is asked for once the lock is {self._chain.confirmations} blocks deep"
            return await self._end(deal, _S.LOCKED, f"{why} (the next market round)")
        outcome = await self._receive(deal, DeliveryRequest(deal.purchase_id))
        if outcome == "unreachable":
            # The seller may be restarting: the payment stays locked and ``resume`` asks again;
            # if no delivery is committed by the deadline, ``settle`` takes the money back.
            return await self._end(
                deal, _S.LOCKED, "seller unreachable; resume retries, the escrow refunds after the deadline"
            )
        if isinstance(outcome, str):
            return await self._end(
                deal, _S.REFUSED, f"delivery refused: {outcome}; refunded after the deadline, disputed if committed"
            )
        text, delivery = outcome
        crystal = await self._crystal_with(deal.listing) or await self._store_skill(text, deal.listing, deal.seller_key)
        await self._purchases.keep_delivery(deal.purchase_id, delivery)
        failpoints.check("market:before-release")  # the skill stored, the seller not yet paid
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
        or why it was refused (the signed delivery is kept then too)."""
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
            try:
                data = self._identity.open_box(delivery.ephemeral, box_nonce(deal.purchase_id), delivery.sealed)
                text = data.decode("utf-8")
            except (SealedDataTampered, UnicodeDecodeError):
                raise PurchaseError("the delivery does not open with this node's key") from None
            if skill_hash(text) != deal.listing.content_hash:
                raise PurchaseError("the delivered skill does not match the signed listing's content hash")
            if (why := unstorable(text)) is not None:
                raise PurchaseError(f"the delivered skill cannot be kept here ({why}); not released")
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

    async def _crystal_with(self, listed: Quote | SkillListing) -> str | None:
        """A crystal here holding exactly the listed skill's bytes (bought before, or gossiped)."""
        crystal = await held_skill(self._store, listed.stable_skill_id, listed.content_hash)
        return crystal.id if crystal else None

    async def _store_skill(self, text: str, listing: SkillListing, seller_key: bytes) -> str:
        source = peer_source(seller_key)
        me = self._identity.public_key.hex()
        mine = [  # a bought skill that answers one of this node's own bounties carries it
            b
            for b in await live_bounties(self._store, self._now_ms(), author=me)
            if matches(b, text=f"{listing.title} {text}", tags=listing.tags, category=listing.category)
        ]
        try:
            crystal = NewCrystal(
                text,
                semantic_type=SemanticType.SKILL,
                origin=Origin.PEER,
                speaker=Speaker.SELLER,
                scope=Scope.PRIVATE,
                source=source,
                skill=SkillVersion(
                    listing.stable_skill_id, listing.version, tags=listing.tags, category=listing.category or None
                ),
                actor=source,
                context=listing.title,
                # Bought is no better than gossiped: held for the person while the seller has no
                # standing here, or whenever the text reads like instructions to the agent.
                quarantine=hold_reason(
                    "\n".join((listing.title, listing.description, text)),
                    author_has_standing=self._standing(seller_key),
                ),
                bounty=Bounty(mine[0].bounty_id, mine[0].reward_micro_usdc) if mine else None,
            )
            remembered = await self._store.remember(crystal)
        except MemoryError_ as exc:  # typed, so the deal is set aside with the reason and the round goes on
            raise UnusableContent(f"the bought skill could not be stored: {exc}") from None
        return remembered.crystal.id
