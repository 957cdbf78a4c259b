"""Each market message is parsed into its type before use; a malformed one is refused by field."""

from __future__ import annotations

from typing import Any

import pytest

from marketplace.exchange.protocol import (
    MAX_PRICE_MICRO_USDC,
    DeliveryRequest,
    MalformedMessage,
    Quote,
    QuoteRequest,
    delivery_hash,
    open_delivery,
    parse_delivery,
    parse_delivery_request,
    parse_quote,
    parse_quote_request,
    seal_delivery,
)

QUOTE = Quote(
    nonce=b"\1" * 32, stable_skill_id="db.pg-upgrade", version=1, content_hash="a" * 64,
    price_micro_usdc=25_000, seller_address="0x" + "22" * 20, buyer=b"\2" * 32, buyer_address="0x" + "11" * 20,
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
        ({"nonce": b"short"}, "nonce"),
        ({"nonce": "ab" * 32}, "nonce"),
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
    with pytest.raises(MalformedMessage, match="ciphertext"):
        parse_delivery({"purchase_id": b"\1" * 32, "key": b"\2" * 32})
    with pytest.raises(MalformedMessage, match="key"):
        parse_delivery({"purchase_id": b"\1" * 32, "ciphertext": b"x", "key": b"short"})


def test_a_delivery_opens_only_with_its_key_and_is_the_same_when_sent_again() -> None:
    key = bytes([7]) * 32
    sealed = seal_delivery("Rotate logs with logrotate -f", key)
    assert sealed == seal_delivery("Rotate logs with logrotate -f", key)  # what the seller committed
    assert open_delivery(sealed, key) == "Rotate logs with logrotate -f"
    with pytest.raises(MalformedMessage, match="does not open"):
        open_delivery(sealed, bytes([8]) * 32)
    assert len(delivery_hash(sealed)) == 32 and delivery_hash(sealed) != delivery_hash(sealed + b"!")


def test_the_purchase_id_is_derived_from_the_buyer_and_the_nonce() -> None:
    other = Quote(**{**{f: getattr(QUOTE, f) for f in Quote.__slots__}, "buyer_address": "0x" + "33" * 20})
    assert QUOTE.purchase_id != other.purchase_id and len(QUOTE.purchase_id) == 32
    assert QUOTE.terms().purchase_id == QUOTE.purchase_id
    with pytest.raises(MalformedMessage, match="version"):
        parse_quote_request({"stable_skill_id": "x", "version": 0, "buyer_address": "0x" + "11" * 20})
