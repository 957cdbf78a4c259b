"""The seller's side of a purchase: answer quote and delivery requests, collect direct payments,
and settle sales as their escrow moves.

What keeps an honest seller paid whatever the buyer does (``docs/marketplace/fair-exchange.md``):
- it delivers only against a lock on exactly the terms it quoted;
- it hands the sealed skill over off chain only while there is time left to commit it before the
  deadline (``offchain_margin_s``); nearer the deadline it commits first, and a commit that fails
  delivers nothing, so a buyer that asks late gets nothing it could refund and keep;
- a delivery the buyer has not released is committed on chain (the same sealed bytes) after
  ``COMMIT_AFTER_S``, or sooner as the deadline nears; after the dispute window it claims;
- a dispute is answered with the one-time secret, and the arbiter judges from the chain; a dispute
  the arbiter leaves undecided is claimed after the arbitration window;
- one sale's failure is logged on that sale and never stops the others.
"""

from __future__ import annotations

import os

from crypto.envelope import decode_envelope
from crypto.errors import EnvelopeError
from ground.rates import RateLimit, TokenBuckets
from marketplace.catalog.listings import listing_envelope
from marketplace.chain_types import Commitment, DealState, DealStatus, EscrowRules, TransferAuthorization
from marketplace.direct_payment import authorization_paid
from marketplace.errors import ChainError, PurchaseError
from marketplace.exchange.chain_time import deadline_now
from marketplace.exchange.deals import SaleRecord, Sales, SaleState
from marketplace.exchange.party import SETTLEMENT_ERRORS, Party, StuckDeals, final_unconfirmed, lock_unconfirmed
from marketplace.exchange.protocol import (
    KIND_DELIVERY,
    KIND_DELIVERY_REQUEST,
    KIND_ERROR,
    KIND_QUOTE,
    KIND_QUOTE_REQUEST,
    MAX_SEALED_BYTES,
    POLICY,
    Delivery,
    DeliveryRequest,
    Quote,
    QuoteRequest,
    fits_a_commitment,
    parse_delivery_request,
    parse_quote_request,
    quote_of,
    readable_quote,
    seal_skill,
)
from marketplace.exchange.quote_slots import FundsCache, Slot, quote_refusal, slot_of
from marketplace.exchange.wallet_proof import proven_wallet
from marketplace.gossip.listing import LISTING
from marketplace.gossip.skill_bytes import held_skill, skill_hash
from marketplace.limits import SellerLimits
from memory.errors import CrystalNotFound
from memory.model import Crystal, Lifecycle

QUOTE_VALID_MS = 120_000
#: A delivery the buyer has not released after this long is committed on chain (the dispute window
#: starts); a buyer that checks and releases at once never makes the seller pay for a commit.
COMMIT_AFTER_S = 60
#: Time kept in hand for a commit to be mined before the deadline.
COMMIT_SLACK_S = 60
_S = SaleState
_D = DealState


class Seller:
    def __init__(
        self,
        party: Party,
        *,
        escrow_window_s: int,
        limits: SellerLimits,
        round_interval_s: float = 30.0,
    ) -> None:
        self._identity = party.identity
        self._wallet = party.wallet
        self._store = party.store
        self._chain = party.chain
        self._messenger = party.messenger
        self._now_ms = party.clock
        self._escrow_window_s = escrow_window_s
        self._limits = limits
        self._standing = party.standing
        self._sales = Sales(party.store, party.clock)
        self._escrow = party.escrow
        self._funds = FundsCache(int(limits.quote_funds_cache_s * 1000), party.clock)
        per_peer = RateLimit(limits.seller_requests_per_min / 60, limits.seller_request_burst)
        self._requests = TokenBuckets(per_peer, max_keys=10_000)
        #: A delivery is committed once the deadline is this near (a round may pass in between).
        self.commit_margin_s = int(round_interval_s) + COMMIT_SLACK_S
        #: Off chain, the sealed skill goes out only with this much time left before the deadline:
        #: enough to wait ``COMMIT_AFTER_S`` for a release and still commit. Nearer, it commits first.
        self.offchain_margin_s = COMMIT_AFTER_S + self.commit_margin_s
        self.stuck = StuckDeals()

    async def answer(self, peer: str, request: bytes) -> bytes:
        """The seller's side of the protocol: one signed answer (or a signed error) per request."""
        try:
            if not self._requests.allow(peer.encode(), self._now_ms()):  # before any signature check or row
                raise PurchaseError("too many requests from your node; try again in a minute")
            envelope = self._messenger.open(request)
            body = envelope.body_map()
            if envelope.kind == KIND_QUOTE_REQUEST:
                return await self._quote(envelope.author, parse_quote_request(body))
            if envelope.kind == KIND_DELIVERY_REQUEST:
                return await self._deliver(envelope.author, parse_delivery_request(body))
            raise PurchaseError(f"cannot answer a {envelope.kind}")
        except (EnvelopeError, PurchaseError, ChainError) as exc:
            return self._messenger.seal(KIND_ERROR, {"error": str(exc)}).encode()

    async def _quote(self, buyer: bytes, request: QuoteRequest) -> bytes:
        skill_id = request.stable_skill_id
        defaulted = await self._sales.defaulted_by(buyer, request.buyer_address)
        if defaulted is not None:  # the escrow cannot stop that buyer; this seller can stop selling to it
            raise PurchaseError(
                f"this seller no longer sells to you: you took back the payment for a skill it had delivered "
                f"(purchase {defaulted.hex()[:16]}…)"
            )
        # The address is only claimed until its wallet signs for this node key: a claim earns nothing.
        proven = proven_wallet(request.wallet_proof, buyer, request.buyer_address)
        standing = self._standing(buyer) or await self._sales.paid_by(buyer, request.buyer_address if proven else "")
        slot = slot_of(standing=standing, proven=proven)
        since = self._now_ms() - QUOTE_VALID_MS
        limits = self._limits
        why = quote_refusal(
            slot, await self._sales.open_quotes(buyer, since, request.buyer_address),
            max_open_quotes=limits.max_open_quotes, per_buyer=limits.max_open_quotes_per_buyer,
            strangers=limits.max_open_quotes_strangers, per_stranger_wallet=limits.max_open_quotes_per_stranger_wallet,
            unproven=limits.max_open_quotes_unproven,
        )  # fmt: skip
        if why is not None:
            raise PurchaseError(why)
        wire = await listing_envelope(self._store, self._identity.public_key.hex(), skill_id)
        if wire is None:
            raise PurchaseError(f"{skill_id} is not listed here")
        listing = LISTING.parse(decode_envelope(wire, max_bytes=POLICY.max_bytes).body_map())
        if request.version != listing.version:
            raise PurchaseError(f"version {request.version} is not the listed one ({listing.version})")
        crystal = await self._held(skill_id, listing.content_hash)
        if crystal is None or crystal.lifecycle in (Lifecycle.EXPIRED, Lifecycle.ARCHIVED):
            raise PurchaseError(f"{skill_id} is no longer held here")
        if not fits_a_commitment(crystal.text):
            raise PurchaseError(
                f"{skill_id} is larger than an escrow commitment holds ({MAX_SEALED_BYTES} bytes sealed): "
                "this seller cannot sell it through the escrow"
            )
        if slot is Slot.FUNDED:  # last: the one check that reads the chain
            balance = await self._funds.balance(request.buyer_address, listing.price_micro_usdc, self._chain.balance)
            if balance < listing.price_micro_usdc:
                raise PurchaseError(
                    f"insufficient funds: the skill costs {listing.price_micro_usdc} micro-USDC, the wallet holds "
                    f"{balance} (this seller quotes a buyer new to it only when its wallet holds the price)"
                )
        quote = Quote(
            salt=os.urandom(32),
            stable_skill_id=skill_id,
            version=listing.version,
            content_hash=listing.content_hash,
            price_micro_usdc=listing.price_micro_usdc,
            seller_address=listing.seller_address,
            buyer=buyer,
            buyer_address=request.buyer_address,
            expires_ms=self._now_ms() + QUOTE_VALID_MS,
            # From a now no earlier than the next block's: a stale latest block would give a deadline
            # nearer than the window, maybe nearer than the escrow's minimum (the lock then reverts).
            deadline_s=await deadline_now(self._chain, self._now_ms) + self._escrow_window_s,
        )
        sealed = self._messenger.seal(KIND_QUOTE, quote.body()).encode()
        await self._sales.add_quote(
            quote.purchase_id,
            buyer,
            crystal.id,
            sealed,
            buyer_address=request.buyer_address,
            standing=standing,
            funded=slot is Slot.FUNDED,
        )
        return sealed

    async def _deliver(self, buyer: bytes, request: DeliveryRequest) -> bytes:
        sale = await self._sales.get(request.purchase_id)
        if sale is None or sale.buyer != buyer:
            raise PurchaseError("no such purchase for this buyer")
        quote = quote_of(sale.quote)
        secret = sale.delivery_key or os.urandom(32)  # a delivery sent again is the same sealed bytes
        if request.authorization is not None:
            await self._collect(sale, quote, request.authorization)
            commitment = await self._sealed(sale, quote, secret)
            await self._sales.move(quote.purchase_id, _S.PAID, delivery_key=secret)
            return self._delivery(quote, commitment)
        # The escrow keeps a fingerprint of the terms: a lock on any other terms (a nearer deadline,
        # another amount or seller) reads as none, and nothing is delivered against it.
        status = await self._escrow.status(quote.terms())
        if status.state is _D.LOCKED and await lock_unconfirmed(self._chain, self._escrow, quote.terms()):
            # A lock a reorg could still undo is no payment: the skill would be out, the money back.
            raise PurchaseError(
                f"your lock is not {self._chain.confirmations} blocks deep yet; ask again then (nothing delivered)"
            )
        # Sealed only once the payment checks out: a request that is refused costs no read and no box.
        if status.state is _D.LOCKED:
            commitment = await self._sealed(sale, quote, secret)
            # Never the latest block's time: on a chain that mines on demand it can be minutes old,
            # and the commitment would land after the deadline (``chain_time``).
            left = quote.deadline_s - await deadline_now(self._chain, self._now_ms)
            if left <= 0:  # the commit could only revert, at this node's cost: refuse before any transaction
                raise PurchaseError(
                    "too late to deliver: the escrow deadline has passed; nothing delivered, the escrow refunds you"
                )
            if left < self.offchain_margin_s:
                # Too near the deadline to hand the skill over and still commit it in time: commit first.
                # If the commit fails (the deadline passed), nothing was revealed.
                await self._sales.keep_delivery_key(quote.purchase_id, secret)  # the secret, first
                try:
                    await self._escrow.commit(self._wallet, quote.terms(), commitment)
                except ChainError as exc:
                    raise PurchaseError(
                        f"too late to deliver: {left} s were left before the escrow deadline and the commitment "
                        f"failed ({exc}); nothing delivered, the escrow refunds you after the deadline"
                    ) from None
                await self._sales.move(quote.purchase_id, _S.COMMITTED)
            else:
                # The secret is kept before the delivery leaves: with it the seller can commit and be paid.
                await self._sales.move(quote.purchase_id, _S.DELIVERED, delivery_key=secret)
        elif status.state in (_D.DELIVERED, _D.DISPUTED, _D.ANSWERED) and sale.delivery_key is not None:
            commitment = await self._sealed(sale, quote, secret)  # committed already; here it is again
        else:
            raise PurchaseError(
                f"payment not locked as quoted (the escrow has no open deal on the quoted terms, deadline included: "
                f"it says {status.state}); nothing delivered"
            )
        return self._delivery(quote, commitment)

    async def _held(self, skill_id: str, chash: str) -> Crystal | None:
        """The crystal holding exactly the listed bytes, if this node still holds it."""
        return await held_skill(self._store, skill_id, chash)

    async def _sealed(self, sale: SaleRecord, quote: Quote, secret: bytes) -> Commitment:
        """The sale's skill sealed to its buyer with ``secret``: what is sent and what is committed."""
        return seal_skill((await self._store.get(sale.crystal_id)).text, quote, secret)

    def _delivery(self, quote: Quote, commitment: Commitment) -> bytes:
        delivery = Delivery(quote.purchase_id, commitment.ephemeral, commitment.sealed)
        return self._messenger.seal(KIND_DELIVERY, delivery.body()).encode()

    async def _collect(self, sale: SaleRecord, quote: Quote, auth: TransferAuthorization) -> None:
        """Collect a direct payment: exactly the quoted terms, once. A used nonce is no proof of
        payment (the buyer can spend it first on a transfer of its own): only a transfer of the
        quoted amount to this seller under that nonce, found on chain, is."""
        if sale.state is _S.PAID:
            return  # collected before: the buyer asks for the delivery again
        terms = {
            "authorizer": (auth.authorizer.lower(), quote.buyer_address.lower()),
            "receiver": (auth.receiver.lower(), quote.seller_address.lower()),
            "amount": (auth.amount, quote.price_micro_usdc),
            "nonce": (auth.nonce, quote.purchase_id),
        }
        for name, (given, wanted) in terms.items():
            if given != wanted:
                raise PurchaseError(f"the payment authorization's {name} differs from the quote; nothing delivered")
        if await self._chain.authorization_used(auth.authorizer, quote.purchase_id):
            paid = await authorization_paid(
                self._chain, auth.authorizer, quote.purchase_id, quote.seller_address, quote.price_micro_usdc
            )
            if not paid:
                raise PurchaseError(
                    "the payment authorization's nonce was already spent on another transfer; nothing delivered"
                )
            return
        # A stranger's authorization costs it nothing to sign: whatever would make the transfer revert
        # (expired, a wallet without the price, a bad signature: ``Chain.send`` simulates it) is refused
        # before this node pays gas for it.
        if auth.valid_before <= await deadline_now(self._chain, self._now_ms):
            raise PurchaseError("the payment authorization has expired; nothing delivered")
        if (held := await self._chain.balance(auth.authorizer)) < auth.amount:
            raise PurchaseError(
                f"the paying wallet holds {held} micro-USDC, less than the {auth.amount} authorized; nothing delivered"
            )
        try:
            await self._chain.receive_with_authorization(self._wallet, auth)
        except ChainError as exc:
            # Collected meanwhile (an earlier try of ours whose receipt was lost): paid all the same.
            if not await authorization_paid(
                self._chain, auth.authorizer, quote.purchase_id, quote.seller_address, quote.price_micro_usdc
            ):
                raise PurchaseError(f"the direct payment failed ({exc}); nothing delivered") from None

    async def settle(self) -> dict[str, int]:
        """Carry each sale on from what the chain says (see the module's notes). A quote is looked at
        once its validity and two escrow windows have passed: never locked, it is deleted
        (``purged``). One sale's failure is kept in ``stuck`` and never stops the others. Returns
        counts by new state."""
        lapse_ms = QUOTE_VALID_MS + 2 * self._escrow_window_s * 1000
        rows = await self._sales.to_settle(self._now_ms() - lapse_ms)
        changed: dict[str, int] = {}
        purged = await self._sales.drop_lapsed()
        if purged:
            changed["purged"] = purged
        for sale in rows:
            try:
                new_state = await self._settle_one(sale)
                if new_state == "purged":
                    await self._sales.drop_unpaid_quote(sale.purchase_id)  # never paid: nothing to keep
                elif isinstance(new_state, SaleState) and new_state is not sale.state:
                    await self._sales.move(sale.purchase_id, new_state)
            except SETTLEMENT_ERRORS as exc:
                self.stuck.note(changed, sale.purchase_id, sale.state, None, exc)
                continue
            self.stuck.note(changed, sale.purchase_id, sale.state, new_state)
        return changed

    async def _settle_one(self, sale: SaleRecord) -> SaleState | str | None:
        """The sale's next state, after whatever chain step it needs now; None: nothing to do yet."""
        quote = readable_quote(sale.quote)
        if quote is None:
            return _S.STALE
        terms = quote.terms()
        status = await self._escrow.status(terms)
        if await final_unconfirmed(self._chain, self._escrow, terms, status):
            return None  # moved once confirmed: a reorg could still undo it
        if status.state is _D.RELEASED:
            return _S.PAID
        if status.state is _D.REFUNDED:
            return self._refunded(sale, await self._delivered_as_listed(sale))
        if status.state is _D.NONE:
            return "purged" if sale.state is _S.QUOTED else None
        if sale.delivery_key is None:
            return None  # locked, never delivered: the buyer refunds after the deadline
        chain_now = await self._chain.timestamp()
        rules = await self._escrow.rules()
        if status.state is _D.LOCKED:  # a deadline to meet: judged by a time that cannot be stale
            return await self._commit_if_due(sale, quote, await deadline_now(self._chain, self._now_ms))
        if status.state is _D.DELIVERED:
            if chain_now >= status.since + rules.dispute_window_s:
                await self._escrow.claim(self._wallet, terms)
                return _S.PAID
            return _S.COMMITTED
        if status.state is _D.DISPUTED:
            # The buyer contests the commitment: publish the one-time secret, so the arbiter can open it.
            await self._escrow.answer(self._wallet, terms, sale.delivery_key)
            return _S.DISPUTED
        if status.state is _D.ANSWERED:
            return await self._claim_undecided(sale, status, rules, chain_now)
        return None

    async def _commit_if_due(self, sale: SaleRecord, quote: Quote, chain_now: int) -> SaleState | None:
        """Commit a delivery the buyer has not released, once it waited long enough or the deadline nears."""
        assert sale.delivery_key is not None
        if chain_now >= quote.deadline_s:
            return None  # too late: the buyer may refund; ``_refunded`` tells whether it defaulted
        waited = self._now_ms() - sale.updated_ms >= COMMIT_AFTER_S * 1000
        if not waited and quote.deadline_s - chain_now > self.commit_margin_s:
            return None
        await self._escrow.commit(self._wallet, quote.terms(), await self._sealed(sale, quote, sale.delivery_key))
        return _S.COMMITTED

    async def _claim_undecided(
        self, sale: SaleRecord, status: DealStatus, rules: EscrowRules, chain_now: int
    ) -> SaleState | None:
        """An answered dispute the arbiter left undecided for the arbitration window (from the answer)
        pays the seller."""
        if chain_now >= status.since + rules.arbitration_window_s:  # from the answer
            quote = quote_of(sale.quote)
            await self._escrow.claim(self._wallet, quote.terms())
            return _S.PAID
        return _S.DISPUTED

    @staticmethod
    def _refunded(sale: SaleRecord, as_listed: bool) -> SaleState:
        """A refund after this node handed the listed skill over off chain, and never got to commit
        it, is the buyer's default; after a commitment it is the arbiter's decision (or a dispute
        left unanswered): the seller's own doing."""
        if sale.state is _S.DELIVERED and as_listed:
            return _S.DEFAULTED
        return _S.REFUNDED

    async def _delivered_as_listed(self, sale: SaleRecord) -> bool:
        """Whether the crystal this node delivered for a sale is the one its quote named (its content
        hash): only then is a refund after delivery the buyer's doing rather than this node's."""
        try:
            text = (await self._store.get(sale.crystal_id)).text
        except CrystalNotFound:
            return False
        return quote_of(sale.quote).content_hash == skill_hash(text)
