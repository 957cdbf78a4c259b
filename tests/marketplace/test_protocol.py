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
    parse_delivery,
    parse_delivery_request,
    parse_quote,
    parse_quote_request,
)

QUOTE = Quote(
    purchase_id=b"\1" * 32, stable_skill_id="db.pg-upgrade", version=1, content_hash="a" * 64,
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
        ({"purchase_id": b"short"}, "purchase_id"),
        ({"purchase_id": "ab" * 32}, "purchase_id"),
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
        parse_delivery({"purchase_id": b"\1" * 32})
    with pytest.raises(MalformedMessage, match="version"):
        parse_quote_request({"stable_skill_id": "x", "version": 0, "buyer_address": "0x" + "11" * 20})
