"""Our market on Circle's FiatToken, the code real USDC runs, compiled from ../shared/usdc
(``marketplace.fiattoken``): what the real token does that our development token does not, and that
the market survives it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest

from marketplace.chain import Chain
from marketplace.chain_types import Account, DealTerms
from marketplace.errors import TransactionReverted
from marketplace.escrow import Escrow
from marketplace.fiattoken.deploy import Governor, usdc_chain
from tests.marketplace.conftest import ANVIL, ARBITER, NO_ANVIL, anvil_process, need_fiattoken
from tests.marketplace.test_escrow import HASH, SEALED


@pytest.fixture(params=["embedded", pytest.param("anvil", marks=pytest.mark.skipif(ANVIL is None, reason=NO_ANVIL))])
async def usdc(request: pytest.FixtureRequest) -> AsyncIterator[Chain]:
    """Our escrow on Circle's token, proxy and all: in the embedded EVM and on anvil."""
    need_fiattoken()
    if request.param == "embedded":
        c = await usdc_chain(None, arbiter=ARBITER.address)
        try:
            yield c
        finally:
            await c.close()
        return
    with anvil_process() as url:
        c = await usdc_chain(url, arbiter=ARBITER.address)
        try:
            yield c
        finally:
            await c.close()


async def test_the_deployed_token_is_fiattoken_behind_its_proxy(usdc: Chain) -> None:
    payer, payee = Account.create(), Account.create()
    await usdc.fund(payer.address, 1_000)
    await usdc.fund(payee.address, 0)
    implementation = await usdc.run(
        lambda: usdc.w3.eth.get_storage_at(
            usdc.token_address, 0x7050C9E0F4CA769C69BD3A8EF740BC37934F8E2C036E5A723FD8EE048ED3F8C3
        )
    )
    assert int.from_bytes(implementation, "big") != 0  # the proxy's implementation slot is set
    assert await usdc.run(lambda: usdc.token_contract.functions.version().call()) == "2"
    await Governor(usdc).blacklist(payee.address)
    with pytest.raises(TransactionReverted, match="blacklisted"):
        await usdc.transfer(payer, payee.address, 10)
    await Governor(usdc).unblacklist(payee.address)
    await usdc.transfer(payer, payee.address, 10)
    assert await usdc.balance(payee.address) == 10


async def _deal(usdc: Chain, *, ahead_s: int = 600) -> tuple[Account, Account, DealTerms]:
    buyer, seller = Account.create(), Account.create()
    await usdc.fund(buyer.address, 1_000_000)
    await usdc.fund(seller.address, 0)
    deal = DealTerms(buyer.address, os.urandom(32), seller.address, 10_000, HASH, await usdc.timestamp() + ahead_s)
    await Escrow(usdc).lock(buyer, deal)
    return buyer, seller, deal


async def test_a_blacklisted_seller_is_paid_once_circle_lifts_it_and_blocks_no_release(usdc: Chain) -> None:
    buyer, seller, deal = await _deal(usdc)
    escrow, circle = Escrow(usdc), Governor(usdc)
    await circle.blacklist(seller.address)
    await escrow.release(buyer, deal)  # the buyer's release is never refused for the seller's sake
    assert (await escrow.status(deal)).state == "released" and await escrow.owed(seller.address) == 10_000
    with pytest.raises(TransactionReverted, match="blacklisted"):
        await escrow.withdraw(seller, 10_000)
    assert await escrow.owed(seller.address) == 10_000  # the refused withdrawal left the credit
    await circle.unblacklist(seller.address)
    await escrow.withdraw(seller, 10_000)
    assert await usdc.balance(seller.address) == 10_000 and await escrow.owed(seller.address) == 0


async def test_a_refund_to_a_blacklisted_buyer_ends_the_deal_and_is_owed_to_the_buyer(usdc: Chain) -> None:
    """Before pull payments the refund pushed the money and reverted: the deal stayed locked, its
    money in the escrow, for as long as Circle kept the buyer on its list."""
    buyer, seller, deal = await _deal(usdc)
    escrow, circle = Escrow(usdc), Governor(usdc)
    await circle.blacklist(buyer.address)
    await usdc.advance_time(601)
    await escrow.refund(seller, deal)  # anyone may end it
    assert (await escrow.status(deal)).state == "refunded" and await escrow.owed(buyer.address) == 10_000
    with pytest.raises(TransactionReverted, match="blacklisted"):
        await escrow.withdraw(buyer, 10_000)
    await circle.unblacklist(buyer.address)
    await escrow.withdraw(buyer, 10_000)
    assert await usdc.balance(buyer.address) == 1_000_000 and await usdc.balance(escrow.address) == 0


async def test_a_pause_during_deals_holds_no_money_once_the_token_resumes(usdc: Chain) -> None:
    """Two deals in flight when Circle pauses the token: one released, one refunded while paused.
    Both end; the money is owed; after the pause everyone withdraws what it is owed, and the
    escrow holds nothing."""
    buyer, seller, paid = await _deal(usdc)
    other_buyer, _, returned = await _deal(usdc)
    escrow, circle = Escrow(usdc), Governor(usdc)
    await circle.pause()
    await escrow.commit(seller, paid, SEALED)  # no token moves in a commitment: it goes on
    await escrow.release(buyer, paid)
    await usdc.advance_time(601)
    await escrow.refund(buyer, returned)
    assert (await escrow.status(paid)).state == "released" and (await escrow.status(returned)).state == "refunded"
    with pytest.raises(TransactionReverted, match="paused"):
        await escrow.withdraw(seller, 10_000)
    await circle.unpause()
    await escrow.withdraw(seller, await escrow.owed(seller.address))
    await escrow.withdraw(other_buyer, await escrow.owed(other_buyer.address))
    assert await usdc.balance(seller.address) == 10_000 and await usdc.balance(other_buyer.address) == 1_000_000
    assert await usdc.balance(escrow.address) == 0
