"""The seller's side of a purchase: answer quote and delivery requests, collect direct payments,
and settle sales as their escrow moves.

Left to the escrow's rules: after the deadline a buyer can refund a lock it never released, even
if a valid delivery reached it. The seller's side is the remedy, not the contract: ``settle``
marks such a sale ``defaulted``, the node counts it against the buyer's trust (which its
attestations carry to the network), and ``_quote`` refuses that buyer from then on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from crypto.envelope import decode_envelope
from crypto.errors import EnvelopeError
from marketplace.catalog.listings import listing_envelope
from marketplace.chain_types import EscrowRules, TransferAuthorization
from marketplace.errors import ChainError, PurchaseError
from marketplace.exchange.arbitration import evidence_of
from marketplace.exchange.deals import SaleRecord, Sales, SaleState
from marketplace.exchange.party import Party
from marketplace.exchange.protocol import (
    KIND_DELIVERY,
    KIND_DELIVERY_REQUEST,
    KIND_ERROR,
    KIND_QUOTE,
    KIND_QUOTE_REQUEST,
    POLICY,
    Delivery,
    DeliveryRequest,
    Quote,
    QuoteRequest,
    delivery_hash,
    parse_delivery_request,
    parse_quote_request,
    quote_of,
    readable_quote,
    seal_delivery,
)
from memory.model import Lifecycle
from memory.storage.crystal_queries import by_content_hash, content_hash_of
from p2p.messages import parse_skill_listing
from p2p.validation import RateLimit, TokenBuckets

QUOTE_VALID_MS = 120_000
#: A delivery the buyer has not released after this long is committed on chain (the dispute window
#: starts); a buyer that checks and releases at once never makes the seller pay for a commit.
COMMIT_AFTER_S = 60
_S = SaleState


@dataclass(frozen=True, slots=True)
class SellerLimits:
    """What one peer may ask of this node as a seller: requests are signed by keys that cost
    nothing, and each quote is a row and a chain call."""

    requests_per_min: float = 12.0  # quote and delivery requests per peer, sustained
    request_burst: int = 5
    max_open_quotes: int = 100  # quotes not yet expired and not delivered, from everyone
    max_open_quotes_per_buyer: int = 3


class Seller:
    def __init__(self, party: Party, *, escrow_window_s: int, limits: SellerLimits) -> None:
        self._identity = party.identity
        self._wallet = party.wallet
        self._store = party.store
        self._chain = party.chain
        self._messenger = party.messenger
        self._now_ms = party.clock
        self._escrow_window_s = escrow_window_s
        self._limits = limits
        self._sales = Sales(party.store, party.clock)
        self._escrow = party.escrow
        self._escrow_rules: EscrowRules | None = None
        self._requests = TokenBuckets(RateLimit(limits.requests_per_min / 60, limits.request_burst), max_keys=10_000)

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
        defaulted = await self._sales.defaulted_by(buyer)
        if defaulted is not None:  # the escrow cannot stop that buyer; this seller can stop selling to it
            raise PurchaseError(
                f"this seller no longer sells to you: you took back the payment for a skill it had delivered "
                f"(purchase {defaulted.hex()[:16]}…)"
            )
        open_quotes, yours = await self._sales.open_quotes(buyer, self._now_ms() - QUOTE_VALID_MS)
        if yours >= self._limits.max_open_quotes_per_buyer:
            raise PurchaseError(f"you have {yours} open quotes here; pay one or let them expire (2 minutes)")
        if open_quotes >= self._limits.max_open_quotes:
            raise PurchaseError("this seller has too many open quotes; try again in a few minutes")
        wire = await listing_envelope(self._store, self._identity.public_key.hex(), skill_id)
        if wire is None:
            raise PurchaseError(f"{skill_id} is not listed here")
        listing = parse_skill_listing(decode_envelope(wire, max_bytes=POLICY.max_bytes).body_map())
        if request.version != listing.version:
            raise PurchaseError(f"version {request.version} is not the listed one ({listing.version})")
        crystal = await by_content_hash(self._store, listing.content_hash)
        if crystal is None or crystal.lifecycle in (Lifecycle.EXPIRED, Lifecycle.ARCHIVED):
            raise PurchaseError(f"{skill_id} is no longer held here")
        quote = Quote(
            nonce=os.urandom(32),
            stable_skill_id=skill_id,
            version=listing.version,
            content_hash=listing.content_hash,
            price_micro_usdc=listing.price_micro_usdc,
            seller_address=listing.seller_address,
            buyer=buyer,
            buyer_address=request.buyer_address,
            expires_ms=self._now_ms() + QUOTE_VALID_MS,
            deadline_s=await self._chain.timestamp() + self._escrow_window_s,
        )
        sealed = self._messenger.seal(KIND_QUOTE, quote.body()).encode()
        await self._sales.add_quote(quote.purchase_id, buyer, crystal.id, sealed)
        return sealed

    async def _deliver(self, buyer: bytes, request: DeliveryRequest) -> bytes:
        sale = await self._sales.get(request.purchase_id)
        if sale is None or sale.buyer != buyer:
            raise PurchaseError("no such purchase for this buyer")
        quote = quote_of(sale.quote)
        key = sale.delivery_key or os.urandom(32)  # a delivery sent again is the same ciphertext
        if request.authorization is not None:
            await self._collect(quote, request.authorization)
            state = _S.PAID  # paid directly: nothing left to settle
        else:
            # The escrow keeps a fingerprint of the terms: a lock on any other terms (a nearer deadline,
            # another amount or seller) reads as none, and nothing is delivered against it.
            status = await self._escrow.status(quote.terms())
            if status.state not in ("locked", "delivered"):
                raise PurchaseError(
                    f"payment not locked as quoted (the escrow has no {status.state} deal on the quoted terms, "
                    "deadline included); nothing delivered"
                )
            state = _S.DELIVERED if status.state == "locked" else _S.COMMITTED  # paid on release or claim
        crystal = await self._store.get(sale.crystal_id)
        delivery = Delivery(quote.purchase_id, seal_delivery(crystal.text, key), key)
        sealed = self._messenger.seal(KIND_DELIVERY, delivery.body())
        # The key is kept before the delivery leaves: with it the seller can be paid without the buyer.
        await self._sales.move(quote.purchase_id, state, delivery_key=key)
        return sealed.encode()

    async def _collect(self, quote: Quote, auth: TransferAuthorization) -> None:
        """Collect a direct payment: exactly the quoted terms, once (a re-sent authorization whose
        nonce is already used was collected before: the seller was paid, it delivers again)."""
        terms = {
            "authorizer": (auth.authorizer.lower(), quote.buyer_address.lower()),
            "receiver": (auth.receiver.lower(), quote.seller_address.lower()),
            "amount": (auth.amount, quote.price_micro_usdc),
            "nonce": (auth.nonce, quote.purchase_id),
        }
        for name, (given, wanted) in terms.items():
            if given != wanted:
                raise PurchaseError(f"the payment authorization's {name} differs from the quote; nothing delivered")
        if not await self._chain.authorization_used(auth.authorizer, quote.purchase_id):
            try:
                await self._chain.transfer_with_authorization(self._wallet, auth)
            except ChainError as exc:
                raise PurchaseError(f"the direct payment failed ({exc}); nothing delivered") from None

    async def settle(self) -> dict[str, int]:
        """Carry each sale on from what the chain says. Delivered and not released after
        ``COMMIT_AFTER_S``: commit the delivery (its ciphertext's hash and key) on chain; committed
        and not disputed within the window: claim the payment. Released: ``paid``. A quote is looked
        at once its validity and two escrow windows have passed: never locked, it is deleted
        (``purged``), so unpaid quotes cost neither rows nor chain calls for long. Returns counts by
        new state."""
        lapse_ms = QUOTE_VALID_MS + 2 * self._escrow_window_s * 1000
        rows = await self._sales.to_settle(self._now_ms() - lapse_ms)
        changed: dict[str, int] = {}
        purged = await self._sales.drop_lapsed()
        if purged:
            changed["purged"] = purged
        for sale in rows:
            new_state = await self._settle_one(sale)
            if new_state == "purged":
                await self._sales.drop_unpaid_quote(sale.purchase_id)  # never paid: nothing to keep
            elif isinstance(new_state, SaleState):
                await self._sales.move(sale.purchase_id, new_state)
            if new_state is not None:
                changed[new_state] = changed.get(new_state, 0) + 1
        return changed

    async def _settle_one(self, sale: SaleRecord) -> SaleState | str | None:
        """The sale's next state, after whatever chain step it needs now; None: nothing to do yet."""
        quote = readable_quote(sale.quote)
        if quote is None:
            return _S.STALE
        terms = quote.terms()
        status = await self._escrow.status(terms)
        if status.state == "released":
            return _S.PAID
        if status.state == "refunded":
            delivered = sale.state in (_S.DELIVERED, _S.COMMITTED, _S.DISPUTED)
            return _S.DEFAULTED if delivered and await self._delivered_as_listed(sale) else _S.REFUNDED
        if status.state == "none":
            return "purged" if sale.state is _S.QUOTED else None
        if status.state == "disputed":
            return _S.DISPUTED if sale.state is not _S.DISPUTED else None
        chain_now = await self._chain.timestamp()
        if status.state == "locked" and sale.state is _S.DELIVERED and sale.delivery_key is not None:
            waited = self._now_ms() - sale.updated_ms >= COMMIT_AFTER_S * 1000
            if waited or terms.deadline - chain_now <= COMMIT_AFTER_S:
                text = (await self._store.get(sale.crystal_id)).text
                ciphertext = seal_delivery(text, sale.delivery_key)
                await self._escrow.commit(self._wallet, terms, delivery_hash(ciphertext), sale.delivery_key)
                return _S.COMMITTED
            return None
        if status.state == "delivered":
            rules = await self._rules()
            if chain_now >= status.committed_at + rules.dispute_window_s:
                await self._escrow.claim(self._wallet, terms)
                return _S.PAID
            return _S.COMMITTED if sale.state is not _S.COMMITTED else None
        return None

    async def evidence(self, purchase_id: bytes) -> bytes | None:
        """The evidence of a sale: this node's signed quote and its delivery, signed again (the same
        ciphertext and key); None if it sold no such thing or delivered nothing for it."""
        sale = await self._sales.get(purchase_id)
        if sale is None or sale.delivery_key is None:
            return None
        text = (await self._store.get(sale.crystal_id)).text
        delivery = Delivery(purchase_id, seal_delivery(text, sale.delivery_key), sale.delivery_key)
        return evidence_of(sale.quote, self._messenger.seal(KIND_DELIVERY, delivery.body()).encode())

    async def _rules(self) -> EscrowRules:
        if self._escrow_rules is None:
            self._escrow_rules = await self._escrow.rules()
        return self._escrow_rules

    async def _delivered_as_listed(self, sale: SaleRecord) -> bool:
        """Whether the crystal this node delivered for a sale is the one its quote named (its content
        hash): only then is a refund after delivery the buyer's doing rather than this node's."""
        return quote_of(sale.quote).content_hash == await content_hash_of(self._store, sale.crystal_id)
