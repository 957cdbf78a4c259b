"""Each market message is parsed into its type before use; a malformed one is refused by field."""

from __future__ import annotations

from typing import Any

import pytest

from crypto.delivery_box import open_with_secret
from crypto.errors import SealedDataTampered
from crypto.identity import Identity
from marketplace.exchange.protocol import (
    MAX_PRICE_MICRO_USDC,
    MAX_SEALED_BYTES,
    DeliveryRequest,
    MalformedMessage,
    Quote,
    QuoteRequest,
    box_nonce,
    nonce_of,
    parse_delivery,
    parse_delivery_request,
    parse_quote,
    parse_quote_request,
    seal_skill,
)

BUYER = Identity.from_seed(bytes([2]) * 32)
QUOTE = Quote(
    salt=b"\1" * 32, stable_skill_id="db.pg-upgrade", version=1, content_hash="a" * 64,
    price_micro_usdc=25_000, seller_address="0x" + "22" * 20, buyer=BUYER.public_key, buyer_address="0x" + "11" * 20,
    expires_ms=1_000, deadline_s=2_000,
)  # fmt: skip


def test_each_message_survives_its_own_body() -> None:
    assert parse_quote(QUOTE.body()) == QUOTE
    request = QuoteRequest("db.pg-upgrade", 3, "0x" + "11" * 20)
    assert parse_quote_request(request.body()) == request
    assert parse_delivery_request(DeliveryRequest(b"\1" * 32).body()) == DeliveryRequest(b"\1" * 32)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"salt": b"short"}, "salt"),
        ({"salt": "ab" * 32}, "salt"),
        ({"price_micro_usdc": MAX_PRICE_MICRO_USDC + 1}, "price_micro_usdc"),
        ({"price_micro_usdc": True}, "price_micro_usdc"),
        ({"seller_address": "not an address"}, "seller_address"),
        ({"content_hash": "A" * 64}, "content_hash"),
        ({"extra": 1}, "unexpected fields"),
    ],
)
def test_a_malformed_quote_is_refused_naming_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(MalformedMessage, match=f"malformed market.quote: .*{field}"):
        parse_quote({**QUOTE.body(), **change})


def test_a_quote_without_a_field_and_bad_requests_are_refused() -> None:
    body = QUOTE.body()
    del body["deadline_s"]
    with pytest.raises(MalformedMessage, match="deadline_s"):
        parse_quote(body)
    with pytest.raises(MalformedMessage, match="authorization"):
        parse_delivery_request({"purchase_id": b"\1" * 32, "authorization": [1, 2, 3]})
    with pytest.raises(MalformedMessage, match="sealed"):
        parse_delivery({"purchase_id": b"\1" * 32, "ephemeral": b"\2" * 32})
    with pytest.raises(MalformedMessage, match="ephemeral"):
        parse_delivery({"purchase_id": b"\1" * 32, "ephemeral": b"short", "sealed": b"x"})
    with pytest.raises(MalformedMessage, match="1-32768 bytes"):
        parse_delivery({"purchase_id": b"\1" * 32, "ephemeral": b"\2" * 32, "sealed": b"x" * (MAX_SEALED_BYTES + 1)})


def test_a_sealed_delivery_opens_for_its_buyer_and_for_whoever_holds_the_one_time_secret() -> None:
    secret = bytes([7]) * 32
    sealed = seal_skill("Rotate logs with logrotate -f", QUOTE, secret)
    assert sealed == seal_skill("Rotate logs with logrotate -f", QUOTE, secret)  # what the seller commits
    assert (sealed.salt, sealed.recipient) == (QUOTE.salt, BUYER.public_key)
    assert nonce_of(sealed.salt, sealed.recipient) == QUOTE.nonce == QUOTE.terms().nonce
    pid = box_nonce(QUOTE.purchase_id)
    assert BUYER.open_box(sealed.ephemeral, pid, sealed.sealed) == b"Rotate logs with logrotate -f"
    assert open_with_secret(secret, BUYER.public_key, pid, sealed.sealed) == b"Rotate logs with logrotate -f"
    with pytest.raises(SealedDataTampered):
        Identity.generate().open_box(sealed.ephemeral, pid, sealed.sealed)  # nobody else
    with pytest.raises(SealedDataTampered):
        open_with_secret(bytes([8]) * 32, BUYER.public_key, pid, sealed.sealed)
    with pytest.raises(SealedDataTampered):  # a box made for one deal does not open as another's
        BUYER.open_box(sealed.ephemeral, bytes(24), sealed.sealed)


def test_the_purchase_id_is_derived_from_the_buyer_and_the_nonce() -> None:
    other = Quote(**{**{f: getattr(QUOTE, f) for f in Quote.__slots__}, "buyer_address": "0x" + "33" * 20})
    assert QUOTE.purchase_id != other.purchase_id and len(QUOTE.purchase_id) == 32
    assert QUOTE.terms().purchase_id == QUOTE.purchase_id
    with pytest.raises(MalformedMessage, match="version"):
        parse_quote_request({"stable_skill_id": "x", "version": 0, "buyer_address": "0x" + "11" * 20})
