"""The market's stream protocol: its message kinds, and a typed parser for each body.

Over one direct stream protocol (``/bitterbot/market/1``), every message a signed envelope:

1. buyer -> seller  ``market.quote_request``    ``QuoteRequest``
2. seller -> buyer  ``market.quote``            ``Quote``: the seller's signed terms
3. buyer -> seller  ``market.delivery_request`` ``DeliveryRequest`` (with a signed payment
   authorization when paying directly)
4. seller -> buyer  ``market.delivery``         ``Delivery``: the skill sealed to the buyer's key
   or ``market.error``                          ``{error}``: why the seller refused

Every body comes from a key that cost nothing: it is parsed into its type, each field checked,
before any of it is used (``MalformedMessage`` names the field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crypto.envelope import EnvelopePolicy
from marketplace.chain_types import TransferAuthorization
from marketplace.errors import PurchaseError
from p2p.errors import SchemaError
from p2p.fields import address, content_hash_field, field, identifier, integer, only, raw_bytes, text

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


class MalformedMessage(PurchaseError):
    """A market message whose body is not what its kind says."""


def _parsed(kind: str, parse: Any, body: dict[str, Any]) -> Any:
    try:
        return parse(body)
    except (SchemaError, ValueError) as exc:
        raise MalformedMessage(f"malformed {kind}: {exc}") from None


@dataclass(frozen=True, slots=True)
class QuoteRequest:
    stable_skill_id: str
    version: int
    buyer_address: str

    def body(self) -> dict[str, Any]:
        return {"stable_skill_id": self.stable_skill_id, "version": self.version, "buyer_address": self.buyer_address}


def parse_quote_request(body: dict[str, Any]) -> QuoteRequest:
    def parse(doc: dict[str, Any]) -> QuoteRequest:
        only(doc, {"stable_skill_id", "version", "buyer_address"})
        return QuoteRequest(identifier(doc, "stable_skill_id"), integer(doc, "version", 1, 10**6),
                            address(doc, "buyer_address"))  # fmt: skip

    result: QuoteRequest = _parsed(KIND_QUOTE_REQUEST, parse, body)
    return result


@dataclass(frozen=True, slots=True)
class Quote:
    """The seller's signed terms for one purchase: the buyer checks them against the listing."""

    purchase_id: bytes
    stable_skill_id: str
    version: int
    content_hash: str
    price_micro_usdc: int
    seller_address: str
    buyer: bytes  # the buyer's public key
    buyer_address: str
    expires_ms: int  # pay (lock or authorize) before this, or the quote is void
    deadline_s: int  # chain time after which the escrow refunds a lock not released

    def body(self) -> dict[str, Any]:
        return {
            "purchase_id": self.purchase_id,
            "stable_skill_id": self.stable_skill_id,
            "version": self.version,
            "content_hash": self.content_hash,
            "price_micro_usdc": self.price_micro_usdc,
            "seller_address": self.seller_address,
            "buyer": self.buyer,
            "buyer_address": self.buyer_address,
            "expires_ms": self.expires_ms,
            "deadline_s": self.deadline_s,
        }


def parse_quote(body: dict[str, Any]) -> Quote:
    def parse(doc: dict[str, Any]) -> Quote:
        only(doc, set(Quote.__slots__))
        return Quote(
            purchase_id=raw_bytes(doc, "purchase_id", _PURCHASE_ID_BYTES),
            stable_skill_id=identifier(doc, "stable_skill_id"),
            version=integer(doc, "version", 1, 10**6),
            content_hash=content_hash_field(doc),
            price_micro_usdc=integer(doc, "price_micro_usdc", 0, MAX_PRICE_MICRO_USDC),
            seller_address=address(doc, "seller_address"),
            buyer=raw_bytes(doc, "buyer", 32),
            buyer_address=address(doc, "buyer_address"),
            expires_ms=integer(doc, "expires_ms", 0, 2**63 - 1),
            deadline_s=integer(doc, "deadline_s", 0, 2**63 - 1),
        )

    result: Quote = _parsed(KIND_QUOTE, parse, body)
    return result


@dataclass(frozen=True, slots=True)
class DeliveryRequest:
    purchase_id: bytes
    authorization: TransferAuthorization | None = None  # paying directly: the signed transfer

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"purchase_id": self.purchase_id}
        if self.authorization is not None:
            body["authorization"] = self.authorization.to_wire()
        return body


def parse_delivery_request(body: dict[str, Any]) -> DeliveryRequest:
    def parse(doc: dict[str, Any]) -> DeliveryRequest:
        only(doc, {"purchase_id", "authorization"})
        wire = field(doc, "authorization", list, optional=True)
        return DeliveryRequest(
            raw_bytes(doc, "purchase_id", _PURCHASE_ID_BYTES),
            None if wire is None else TransferAuthorization.from_wire(wire),
        )

    result: DeliveryRequest = _parsed(KIND_DELIVERY_REQUEST, parse, body)
    return result


@dataclass(frozen=True, slots=True)
class Delivery:
    purchase_id: bytes
    sealed: bytes  # the skill's text sealed to the buyer's key

    def body(self) -> dict[str, Any]:
        return {"purchase_id": self.purchase_id, "sealed": self.sealed}


def parse_delivery(body: dict[str, Any]) -> Delivery:
    def parse(doc: dict[str, Any]) -> Delivery:
        only(doc, {"purchase_id", "sealed"})
        return Delivery(raw_bytes(doc, "purchase_id", _PURCHASE_ID_BYTES), raw_bytes(doc, "sealed"))

    result: Delivery = _parsed(KIND_DELIVERY, parse, body)
    return result


def refusal_of(body: dict[str, Any]) -> str:
    """Why the seller refused (a ``market.error`` body), bounded."""
    try:
        return text(body, "error", 2_000, empty=True)
    except SchemaError:
        return "(an unreadable refusal)"
