"""The market's stream protocol: its message kinds, and a typed parser for each body.

Over one direct stream protocol (``/bitterbot/market/1``), every message a signed envelope:

1. buyer -> seller  ``market.quote_request``    ``QuoteRequest``
2. seller -> buyer  ``market.quote``            ``Quote``: the seller's signed terms
3. buyer -> seller  ``market.delivery_request`` ``DeliveryRequest`` (with a signed payment
   authorization when paying directly)
4. seller -> buyer  ``market.delivery``         ``Delivery``: the skill sealed to the buyer's node key
   or ``market.error``                          ``{error}``: why the seller refused

The sealed delivery is exactly what the seller can commit on chain later (``Commitment``): a buyer
that never got the message reads the same bytes from the escrow.

Every body comes from a key that cost nothing: it is parsed into its type, each field checked,
before any of it is used (``MalformedMessage`` names the field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crypto.envelope import EnvelopePolicy, decode_envelope
from ground.errors import FieldError
from ground.fields import field, raw_bytes, text
from ground.wire import Spec, Wire, blob, digest, eth_address, ident, key, whole
from marketplace.chain_types import Commitment, DealTerms, TransferAuthorization, purchase_id_of
from marketplace.errors import PurchaseError
from marketplace.exchange.wallet_proof import PROOF_BYTES
from memory.errors import MemoryError_
from memory.model import NewCrystal

PROTOCOL = "/bitterbot/market/1"
KIND_QUOTE_REQUEST = "market.quote_request"
KIND_QUOTE = "market.quote"
KIND_DELIVERY_REQUEST = "market.delivery_request"
KIND_DELIVERY = "market.delivery"
KIND_ERROR = "market.error"
POLICY = EnvelopePolicy(
    kinds=frozenset({KIND_QUOTE_REQUEST, KIND_QUOTE, KIND_DELIVERY_REQUEST, KIND_DELIVERY, KIND_ERROR}),
    max_bytes=1_000_000,
)
MAX_PRICE_MICRO_USDC = 10**12
_PURCHASE_ID_BYTES = 32
#: The largest sealed delivery the escrow takes in a commitment (``MAX_SEALED`` in Escrow.vy): a
#: seller quotes only skills that fit, so it can always put what it delivered on chain.
MAX_SEALED_BYTES = 32_768
SEAL_OVERHEAD_BYTES = 16


class MalformedMessage(PurchaseError):
    """A market message whose body is not what its kind says."""


def _parsed(kind: str, parse: Any, body: dict[str, Any]) -> Any:
    try:
        return parse(body)
    except ValueError as exc:  # a FieldError too
        raise MalformedMessage(f"malformed {kind}: {exc}") from None


@dataclass(frozen=True, slots=True)
class QuoteRequest:
    stable_skill_id: str
    version: int
    buyer_address: str
    #: The wallet's signature that it buys for the request's node key (``marketplace.exchange.wallet_proof``):
    #: without it the address is only claimed, and earns the request neither standing nor a
    #: funded stranger's quote slot. Optional on the wire: an earlier release's buyer sends none.
    wallet_proof: bytes | None = None

    def body(self) -> dict[str, Any]:
        return QUOTE_REQUEST_WIRE.body(self)


def _proof(doc: dict[str, Any], name: str) -> bytes | None:
    value = field(doc, name, bytes, optional=True)
    if value is not None and len(value) != PROOF_BYTES:
        raise FieldError(f"{name!r} must be {PROOF_BYTES} bytes")
    return None if value is None else bytes(value)


QUOTE_REQUEST_WIRE = Wire(
    QuoteRequest,
    {
        "stable_skill_id": ident(),
        "version": whole(1, 10**6),
        "buyer_address": eth_address(),
        "wallet_proof": Spec(_proof, omitted=True),
    },
)


def parse_quote_request(body: dict[str, Any]) -> QuoteRequest:
    result: QuoteRequest = _parsed(KIND_QUOTE_REQUEST, QUOTE_REQUEST_WIRE.parse, body)
    return result


@dataclass(frozen=True, slots=True)
class Quote:
    """The seller's signed terms for one purchase: the buyer checks them against the listing. The
    purchase id is the buyer's own, derived from its address and the nonce, which is the hash of the
    seller's ``salt`` and the buyer's node key: the terms the buyer locks name the key the delivery
    must be sealed to, and the arbiter can check that the seller sealed to it."""

    salt: bytes
    stable_skill_id: str
    version: int
    content_hash: str
    price_micro_usdc: int
    seller_address: str
    buyer: bytes  # the buyer's public key
    buyer_address: str
    expires_ms: int  # pay (lock or authorize) before this, or the quote is void
    deadline_s: int  # chain time by which the seller commits a delivery, or the buyer may refund

    @property
    def nonce(self) -> bytes:
        return nonce_of(self.salt, self.buyer)

    @property
    def purchase_id(self) -> bytes:
        return purchase_id_of(self.buyer_address, self.nonce)

    def terms(self) -> DealTerms:
        """The escrow deal these terms make (its fingerprint is what the escrow keeps)."""
        return DealTerms(
            self.buyer_address, self.nonce, self.seller_address, self.price_micro_usdc,
            bytes.fromhex(self.content_hash), self.deadline_s,
        )  # fmt: skip

    def body(self) -> dict[str, Any]:
        return QUOTE_WIRE.body(self)


QUOTE_WIRE = Wire(
    Quote,
    {
        "salt": blob(_PURCHASE_ID_BYTES),
        "stable_skill_id": ident(),
        "version": whole(1, 10**6),
        "content_hash": digest(),
        "price_micro_usdc": whole(0, MAX_PRICE_MICRO_USDC),
        "seller_address": eth_address(),
        "buyer": key(),
        "buyer_address": eth_address(),
        "expires_ms": whole(0, 2**63 - 1),
        "deadline_s": whole(0, 2**63 - 1),
    },
)


def parse_quote(body: dict[str, Any]) -> Quote:
    result: Quote = _parsed(KIND_QUOTE, QUOTE_WIRE.parse, body)
    return result


def quote_of(wire: bytes) -> Quote:
    """The quote in a signed quote envelope as a purchase or a sale keeps it."""
    return parse_quote(decode_envelope(wire, max_bytes=POLICY.max_bytes).body_map())


#: Why a kept deal whose quote this release cannot read is set aside (``stale``).
STALE_DETAIL = "its quote is in an earlier release's form (for an earlier escrow): settle it with that release"


def readable_quote(wire: bytes) -> Quote | None:
    """The kept quote, or None if it is not in this release's form (a deal an earlier release left
    unfinished, against the escrow of its day): such a deal is set aside, not settled here, and one
    of them must not stop the others."""
    try:
        return quote_of(wire)
    except MalformedMessage:
        return None


@dataclass(frozen=True, slots=True)
class DeliveryRequest:
    purchase_id: bytes
    authorization: TransferAuthorization | None = None  # paying directly: the signed transfer

    def body(self) -> dict[str, Any]:
        return DELIVERY_REQUEST_WIRE.body(self)


def _authorization(doc: dict[str, Any], name: str) -> TransferAuthorization | None:
    wire = field(doc, name, list, optional=True)
    return None if wire is None else TransferAuthorization.from_wire(wire)


DELIVERY_REQUEST_WIRE = Wire(
    DeliveryRequest,
    {
        "purchase_id": blob(_PURCHASE_ID_BYTES),
        "authorization": Spec(_authorization, lambda authorization: authorization.to_wire(), omitted=True),
    },
)


def parse_delivery_request(body: dict[str, Any]) -> DeliveryRequest:
    result: DeliveryRequest = _parsed(KIND_DELIVERY_REQUEST, DELIVERY_REQUEST_WIRE.parse, body)
    return result


@dataclass(frozen=True, slots=True)
class Delivery:
    """The skill sealed to the buyer's node key with the seller's one-time key (``ephemeral`` is its
    public half). The same bytes are what the seller commits on chain if the buyer does not release;
    if the buyer disputes them, the seller publishes the one-time secret and anyone can open them."""

    purchase_id: bytes
    ephemeral: bytes
    sealed: bytes

    def body(self) -> dict[str, Any]:
        return DELIVERY_WIRE.body(self)


def _sealed(doc: dict[str, Any], name: str) -> bytes:
    value = raw_bytes(doc, name)
    if not 0 < len(value) <= MAX_SEALED_BYTES:
        raise FieldError(f"a sealed delivery holds 1-{MAX_SEALED_BYTES} bytes")
    return value


DELIVERY_WIRE = Wire(Delivery, {"purchase_id": blob(_PURCHASE_ID_BYTES), "ephemeral": key(), "sealed": Spec(_sealed)})


def parse_delivery(body: dict[str, Any]) -> Delivery:
    result: Delivery = _parsed(KIND_DELIVERY, DELIVERY_WIRE.parse, body)
    return result


def nonce_of(salt: bytes, buyer_key: bytes) -> bytes:
    """The deal's nonce: keccak256(salt ‖ the buyer's Ed25519 node key)."""
    from eth_utils.crypto import keccak

    return bytes(keccak(salt + buyer_key))


def box_nonce(purchase_id: bytes) -> bytes:
    """The nonce a deal's delivery is sealed under: its purchase id's first 24 bytes (one box per
    one-time key, and a box made for one deal does not open as another's)."""
    return purchase_id[:24]


def seal_skill(text: str, quote: Quote, secret: bytes) -> Commitment:
    """The skill sealed to the quote's buyer with the one-time ``secret``, as sent and as committed."""
    from crypto.delivery_box import ephemeral_public, seal_for

    sealed = seal_for(quote.buyer, secret, box_nonce(quote.purchase_id), text.encode("utf-8"))
    return Commitment(ephemeral_public(secret), quote.salt, quote.buyer, sealed)


def fits_a_commitment(text: str) -> bool:
    """Whether the skill, sealed, fits in an escrow commitment."""
    return len(text.encode("utf-8")) + SEAL_OVERHEAD_BYTES <= MAX_SEALED_BYTES


class UnusableContent(PurchaseError):
    """A bought skill this node cannot keep (memory refused it): the deal is set aside with the
    reason, and no round or daemon stops on it."""


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be kept as a crystal (blank, too long), or None. A delivery is checked
    with it before anything is released: the hash alone passes a whitespace-only skill, which memory
    refuses, and a deal that fails at storing failed again at every restart (issue 49)."""
    try:
        NewCrystal(text)
    except MemoryError_ as exc:
        return str(exc)
    return None


def refusal_of(body: dict[str, Any]) -> str:
    """Why the seller refused (a ``market.error`` body), bounded."""
    try:
        return text(body, "error", 2_000, empty=True)
    except FieldError:
        return "(an unreadable refusal)"
