"""What a peer may ask of a seller (issue 13, finding 5): quote requests were free, each inserted a
sales row and made a chain call, and unpaid quotes were polled for 22 minutes and never deleted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from crypto.envelope import decode_envelope, pack_body, seal_envelope
from crypto.identity import Identity
from ground.authority import Speaker
from marketplace.chain import Chain
from marketplace.exchange.market import ESCROW_WINDOW_S
from marketplace.exchange.protocol import KIND_ERROR, KIND_QUOTE, KIND_QUOTE_REQUEST
from marketplace.exchange.seller import QUOTE_VALID_MS
from marketplace.limits import SellerLimits
from tests.marketplace.test_purchase import Side, SilentSeller, close, trade

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def quote_request(buyer: Identity) -> bytes:
    body = {"stable_skill_id": "db.pg-upgrade", "version": 1, "buyer_address": "0x" + "11" * 20}
    return seal_envelope(buyer, KIND_QUOTE_REQUEST, pack_body(body), now_ms=now_ms()).encode()


async def ask(seller: Side, peer: str, buyer: Identity) -> tuple[str, str]:
    answer = decode_envelope(await seller.market.answer(peer, quote_request(buyer)), max_bytes=1_000_000)
    return answer.kind, str(answer.body_map().get("error", ""))


async def sales_rows(seller: Side) -> int:
    async with seller.store.reader().execute("SELECT count(*) FROM sales") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


#: Small limits, so a test reaches them quickly.
SMALL = SellerLimits(seller_requests_per_min=6, seller_request_burst=4, max_open_quotes=6, max_open_quotes_per_buyer=2)


async def test_one_peer_gets_its_burst_then_is_refused_before_any_row_and_others_are_not(
    tmp_path: Path, chain: Chain
) -> None:
    seller, buyer = await trade(tmp_path, chain, limits=SMALL)
    try:
        answers = [await ask(seller, "flooding-peer", Identity.generate()) for _ in range(20)]
        assert [kind for kind, _ in answers[:4]] == [KIND_QUOTE] * 4
        assert all(kind == KIND_ERROR and "too many requests" in why for kind, why in answers[4:])
        assert await sales_rows(seller) == 4
        assert (await ask(seller, "another-peer", Identity.generate()))[0] == KIND_QUOTE
    finally:
        await close(buyer, seller)


async def test_open_quotes_are_capped_in_total_and_per_buyer_whatever_the_peer(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, limits=SMALL)
    try:
        one_key = Identity.generate()
        per_buyer = [await ask(seller, f"peer-{i}", one_key) for i in range(3)]
        assert [k for k, _ in per_buyer] == [KIND_QUOTE, KIND_QUOTE, KIND_ERROR]
        assert "2 open quotes" in per_buyer[2][1]
        crowd = [await ask(seller, f"crowd-{i}", Identity.generate()) for i in range(10)]
        assert [k for k, _ in crowd] == [KIND_QUOTE] * 4 + [KIND_ERROR] * 6
        assert "too many open quotes" in crowd[-1][1]
        assert await sales_rows(seller) == 6
    finally:
        await close(buyer, seller)


async def test_unpaid_quotes_are_deleted_once_they_lapse_and_old_lapsed_rows_too(
    tmp_path: Path, chain: Chain, monkeypatch: pytest.MonkeyPatch
) -> None:
    seller, buyer = await trade(tmp_path, chain)
    try:
        for i in range(3):
            assert (await ask(seller, f"peer-{i}", Identity.generate()))[0] == KIND_QUOTE
        async with seller.store.transaction() as db:  # a row an earlier release marked lapsed and kept
            await db.execute(
                "INSERT INTO sales (purchase_id, buyer, crystal_id, quote, state, updated_ms) "
                "VALUES ('ab', 'cd', 'x', x'00', 'lapsed', 1)"
            )
        assert await seller.market.settle_sales() == {"purged": 1}  # the quotes are still young
        assert await sales_rows(seller) == 3
        seller.clock.ahead_ms = QUOTE_VALID_MS + 2 * ESCROW_WINDOW_S * 1000 + 1_000
        assert await seller.market.settle_sales() == {"purged": 3}
        assert await sales_rows(seller) == 0
        assert await seller.market.settle_sales() == {}
    finally:
        await close(buyer, seller)


async def test_a_quote_the_buyer_locked_is_kept_past_the_lapse_and_settled_when_refunded(
    tmp_path: Path, chain: Chain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Money locked for a quote is the buyer's to resume with; only a quote nobody paid goes."""
    seller, buyer = await trade(tmp_path, chain, SilentSeller)  # takes the lock, never delivers
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "refused"
        assert await seller.market.settle_sales() == {}  # young: not even looked at
        seller.clock.ahead_ms = QUOTE_VALID_MS + 2 * ESCROW_WINDOW_S * 1000 + 1_000
        assert await seller.market.settle_sales() == {}  # locked on the chain: kept
        assert await sales_rows(seller) == 1
        await chain.advance_time(601)
        assert await buyer.market.settle_purchases() == {"refunded": 1}
        assert await seller.market.settle_sales() == {"refunded": 1}
    finally:
        await close(buyer, seller)
