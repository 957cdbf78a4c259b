"""Evidence in a disputed purchase, and the arbiter's judgement of it.

The evidence is two messages the seller signed: its quote (the terms, the listing's content hash
among them) and its delivery (the ciphertext and the one-time key). Either party can produce it:
the buyer kept the delivery it received, the seller kept the key and signs the same delivery
again (the ciphertext is reproducible). The arbiter checks both signatures and that the escrow
holds a disputed deal on exactly those terms, opens the ciphertext with the key, and hashes what
it finds: the listed content means the seller delivered, anything else (or nothing that opens)
means it did not. One transaction carries the decision (``Escrow.resolve``).
"""

from __future__ import annotations

from dataclasses import dataclass

from crypto.envelope import decode_envelope, pack_body, unpack_untrusted, verify_signature
from crypto.errors import EnvelopeError
from marketplace.chain_types import DealTerms
from marketplace.errors import PurchaseError
from marketplace.escrow import Escrow
from marketplace.exchange.protocol import (
    KIND_DELIVERY,
    KIND_QUOTE,
    POLICY,
    MalformedMessage,
    Quote,
    open_delivery,
    parse_delivery,
    parse_quote,
)
from memory.model import content_hash

MAX_EVIDENCE_BYTES = 2 * POLICY.max_bytes + 1_024


class EvidenceRefused(PurchaseError):
    """Evidence that cannot be judged: unsigned, mismatched, or for a deal not in dispute."""


@dataclass(frozen=True, slots=True)
class Verdict:
    terms: DealTerms
    to_seller: bool
    why: str


def evidence_of(quote: bytes, delivery: bytes) -> bytes:
    """The evidence file: the seller's signed quote and signed delivery, as sent."""
    return pack_body({"format": "bitterbot-node/evidence", "version": 1, "quote": quote, "delivery": delivery})


def _signed_by_seller(quote_wire: bytes, delivery_wire: bytes) -> tuple[Quote, bytes, bytes]:
    try:
        quote_env = decode_envelope(quote_wire, max_bytes=POLICY.max_bytes)
        delivery_env = decode_envelope(delivery_wire, max_bytes=POLICY.max_bytes)
        verify_signature(quote_env)
        verify_signature(delivery_env)
    except EnvelopeError as exc:
        raise EvidenceRefused(f"the evidence is not two signed messages: {exc}") from None
    if (quote_env.kind, delivery_env.kind) != (KIND_QUOTE, KIND_DELIVERY):
        raise EvidenceRefused("the evidence must be a quote and a delivery")
    if quote_env.author != delivery_env.author:
        raise EvidenceRefused("the quote and the delivery are signed by different keys")
    quote = parse_quote(quote_env.body_map())
    delivery = parse_delivery(delivery_env.body_map())
    if delivery.purchase_id != quote.purchase_id:
        raise EvidenceRefused("the delivery is for another purchase than the quote")
    return quote, delivery.ciphertext, delivery.key


async def judge(evidence: bytes, escrow: Escrow) -> Verdict:
    """What the arbiter decides on ``evidence`` (it sends nothing: ``Escrow.resolve`` does)."""
    if len(evidence) > MAX_EVIDENCE_BYTES:
        raise EvidenceRefused(f"evidence of {len(evidence)} bytes is larger than {MAX_EVIDENCE_BYTES}")
    try:
        doc = unpack_untrusted(evidence, max_size=MAX_EVIDENCE_BYTES)
        quote_wire, delivery_wire = bytes(doc["quote"]), bytes(doc["delivery"])
    except (EnvelopeError, KeyError, TypeError, ValueError) as exc:
        raise EvidenceRefused(f"not an evidence file: {exc}") from None
    try:
        quote, ciphertext, key = _signed_by_seller(quote_wire, delivery_wire)
    except MalformedMessage as exc:
        raise EvidenceRefused(str(exc)) from None
    terms = quote.terms()
    status = await escrow.status(terms)
    if status.state != "disputed":
        raise EvidenceRefused(f"the escrow holds no disputed deal on these terms (it says {status.state})")
    try:
        text = open_delivery(ciphertext, key)
    except MalformedMessage:
        return Verdict(terms, False, "the seller's signed delivery does not open with its own key")
    if content_hash(text) != quote.content_hash:
        return Verdict(terms, False, "the seller's signed delivery is not the listed content")
    return Verdict(terms, True, "the seller's signed delivery is exactly the listed content")
