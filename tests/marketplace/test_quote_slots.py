"""Issue 47: a seller's quote slots for strangers, and for buyers with standing.

Attack "quote-slot denial, again": 40 fresh keys took every slot kept for buyers new to a seller,
so a genuine new buyer was refused for minutes, over and over. And the slots kept for buyers with
standing went to any request that named a past buyer's wallet, unchecked. A stranger now proves
its wallet (it signs the request) and that the wallet holds the price; standing counts only for a
proven wallet (``marketplace.exchange.quote_slots``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from crypto.envelope import decode_envelope, pack_body, seal_envelope
from crypto.identity import Identity
from ground.authority import Speaker
from marketplace.chain import Chain
from marketplace.chain_types import Account
from marketplace.exchange.protocol import KIND_ERROR, KIND_QUOTE, KIND_QUOTE_REQUEST
from marketplace.exchange.quote_slots import FundsCache, OpenQuotes, Slot, quote_refusal
from marketplace.exchange.wallet_proof import proven_wallet, wallet_proof
from marketplace.limits import SellerLimits
from tests.marketplace.test_purchase import PRICE, Side, close, trade

FLOOD = 40


async def quote_answer(
    seller: Side, peer: str, key: Identity, address: str, proof: bytes | None = None
) -> tuple[str, str]:
    body: dict[str, object] = {"stable_skill_id": "db.pg-upgrade", "version": 1, "buyer_address": address}
    if proof is not None:
        body["wallet_proof"] = proof
    request = seal_envelope(key, KIND_QUOTE_REQUEST, pack_body(body), now_ms=time.time_ns() // 10**6)
    answer = decode_envelope(await seller.market.answer(peer, request.encode()), max_bytes=10**6)
    return answer.kind, str(answer.body_map().get("error", ""))


def test_a_wallet_proof_holds_only_for_its_wallet_and_its_node_key() -> None:
    wallet, key = Account.create(), Identity.generate().public_key
    proof = wallet_proof(wallet.private_key, key)
    assert proven_wallet(proof, key, wallet.address)
    assert proven_wallet(proof, key, wallet.address.lower())
    assert not proven_wallet(proof, Identity.generate().public_key, wallet.address)  # another node key
    assert not proven_wallet(proof, key, Account.create().address)  # another wallet named
    assert not proven_wallet(None, key, wallet.address)
    assert not proven_wallet(b"\x00" * 65, key, wallet.address)


def test_each_pool_is_bounded_on_its_own() -> None:
    limits = {"max_open_quotes": 100, "per_buyer": 3, "strangers": 40, "per_stranger_wallet": 1, "unproven": 10}
    unproven_full = OpenQuotes(total=10, yours=0, strangers=0, unproven=10, wallet=0)
    assert quote_refusal(Slot.UNPROVEN, unproven_full, **limits) is not None
    assert quote_refusal(Slot.FUNDED, unproven_full, **limits) is None  # a flood of fresh keys fills only its own
    assert quote_refusal(Slot.STANDING, unproven_full, **limits) is None
    one_per_wallet = OpenQuotes(total=1, yours=0, strangers=1, unproven=0, wallet=1)
    assert "your wallet has 1 open quotes" in str(quote_refusal(Slot.FUNDED, one_per_wallet, **limits))
    strangers_full = OpenQuotes(total=40, yours=0, strangers=40, unproven=0, wallet=0)
    assert "buyers new to it" in str(quote_refusal(Slot.FUNDED, strangers_full, **limits))
    assert quote_refusal(Slot.STANDING, strangers_full, **limits) is None


async def test_a_balance_that_covers_the_price_is_kept_and_one_short_of_it_is_read_again() -> None:
    now, reads, balances = [0], [], {"0xa": 5}

    async def read(address: str) -> int:
        reads.append(address)
        return balances[address]

    cache = FundsCache(ttl_ms=30_000, clock=lambda: now[0])
    assert await cache.balance("0xa", 10, read) == 5
    balances["0xa"] = 50  # the refused buyer funds its wallet: served at once
    assert await cache.balance("0xa", 10, read) == 50
    balances["0xa"] = 0
    assert await cache.balance("0xa", 10, read) == 50  # kept: a flood naming it costs no read
    now[0] = 30_000
    assert await cache.balance("0xa", 10, read) == 0
    assert len(reads) == 3


@pytest.mark.slow
async def test_forty_fresh_keys_do_not_keep_a_new_buyer_with_funds_from_its_quote(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, limits=SellerLimits())
    try:
        rich = Account.create()  # the flood's one funded wallet, named by every fresh key
        await chain.fund(rich.address, PRICE)
        answers = []
        for i in range(FLOOD):
            key = Identity.generate()
            # the new buyer's own wallet, claimed; a wallet that holds the price, proven; an empty one, proven
            answers.append(await quote_answer(seller, f"flood-{i}", key, buyer.wallet.address))
            answers.append(await quote_answer(seller, f"flood-{i}", key, rich.address,
                                              wallet_proof(rich.private_key, key.public_key)))  # fmt: skip
            empty = Account.create()
            answers.append(await quote_answer(seller, f"flood-{i}", key, empty.address,
                                              wallet_proof(empty.private_key, key.public_key)))  # fmt: skip
        quoted = sum(kind == KIND_QUOTE for kind, _ in answers)
        assert quoted == SellerLimits().max_open_quotes_unproven + 1  # the claims' pool, and one for the rich wallet
        assert sum("insufficient funds" in why for _, why in answers) == FLOOD  # empty wallets: no quote at all
        assert sum("your wallet has 1 open quotes" in why for _, why in answers) == FLOOD - 1
        bought = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert bought.state == "completed", bought.detail  # the new buyer proved its wallet, which holds the price
    finally:
        await close(buyer, seller)


@pytest.mark.slow
async def test_a_past_buyers_wallet_gives_standing_only_with_its_signature(tmp_path: Path, chain: Chain) -> None:
    seller, buyer = await trade(tmp_path, chain, limits=SellerLimits())
    try:
        bought = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert bought.state == "completed"
        assert await seller.market.settle_sales() == {"paid": 1}  # the buyer's wallet has paid here: standing
        for i in range(SellerLimits().max_open_quotes_unproven):  # strangers without proof fill their pool
            assert (await quote_answer(seller, f"filler-{i}", Identity.generate(), "0x" + f"{i:02x}" * 20))[
                0
            ] == KIND_QUOTE
        past = buyer.wallet.address
        claimed = await quote_answer(seller, "claimer", Identity.generate(), past)
        assert claimed[0] == KIND_ERROR and "did not prove their wallet" in claimed[1]
        thief, forger = Identity.generate(), Account.create()
        forged = await quote_answer(seller, "forger", thief, past, wallet_proof(forger.private_key, thief.public_key))
        assert forged[0] == KIND_ERROR and "did not prove their wallet" in forged[1]  # signed by another wallet
        lifted = wallet_proof(buyer.wallet.private_key, buyer.identity.public_key)  # the real one, for another key
        replayed = await quote_answer(seller, "replayer", thief, past, lifted)
        assert replayed[0] == KIND_ERROR and "did not prove their wallet" in replayed[1]
        new_key = Identity.generate()  # the past buyer itself, under a new node key, proving its wallet
        proof = wallet_proof(buyer.wallet.private_key, new_key.public_key)
        kind, why = await quote_answer(seller, "returning", new_key, past, proof)
        assert kind == KIND_QUOTE, why
        async with seller.store.reader().execute(
            "SELECT standing, funded FROM sales WHERE buyer = ?", (new_key.public_key.hex(),)
        ) as cursor:
            assert [tuple(row) for row in await cursor.fetchall()] == [(1, 0)]  # a standing slot, not a stranger's
    finally:
        await close(buyer, seller)
