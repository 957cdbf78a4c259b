"""Our market on Circle's FiatToken, the code real USDC runs, compiled from ../shared/usdc
(``marketplace.fiattoken``): what the real token does that our development token does not, and that
the market survives it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ground.authority import Speaker
from marketplace.chain import Chain
from marketplace.chain_types import Account, DealTerms, Receipt, TransferAuthorization
from marketplace.errors import TransactionReverted
from marketplace.escrow import Escrow
from marketplace.exchange.seller import Seller
from marketplace.fiattoken.deploy import NAME, Governor, usdc_chain
from tests.marketplace.conftest import ARBITER, ON_ANVIL, anvil_process, need_fiattoken
from tests.marketplace.test_escrow import HASH, SEALED
from tests.marketplace.test_purchase import PRICE, SKILL, close, trade


@pytest.fixture(params=["embedded", pytest.param("anvil", marks=ON_ANVIL)])
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


@pytest.mark.parametrize("where", ["embedded", pytest.param("anvil", marks=ON_ANVIL)])
async def test_signatures_follow_the_domain_the_token_was_deployed_with(where: str) -> None:
    """Deployments of USDC differ in their EIP-712 name ("USD Coin", "USDC", "Bridged USDC"): the
    permit and the transfer authorization are signed under the name read from the chain. A client
    with our name built in is refused by this token (the last check shows the test can tell)."""
    need_fiattoken()
    with contextlib.ExitStack() as stack:
        url = None if where == "embedded" else stack.enter_context(anvil_process())
        bridged = await usdc_chain(url, arbiter=ARBITER.address, name="Bridged USDC (Test)")
        await _signed_under_the_chains_domain(bridged)


async def _signed_under_the_chains_domain(usdc: Chain) -> None:
    try:
        buyer, seller = Account.create(), Account.create()
        await usdc.fund(buyer.address, 1_000_000)
        await usdc.fund(seller.address, 0)
        deal = DealTerms(buyer.address, os.urandom(32), seller.address, 10_000, HASH, await usdc.timestamp() + 600)
        await Escrow(usdc).lock(buyer, deal)  # no allowance: locked with a permit
        assert (await Escrow(usdc).status(deal)).state == "locked"
        auth = await usdc.authorize_transfer(buyer, seller.address, 500, os.urandom(32), 2**40)
        await usdc.receive_with_authorization(seller, auth)
        assert await usdc.balance(seller.address) == 500
        usdc._domain = {**usdc._permit_domain(), "name": NAME}  # a client with the name hard-coded
        naive = await usdc.authorize_transfer(buyer, seller.address, 500, os.urandom(32), 2**40)
        with pytest.raises(TransactionReverted, match="invalid signature"):
            await usdc.receive_with_authorization(seller, naive)
    finally:
        await usdc.close()


async def test_only_the_payee_can_collect_a_direct_payment(chain: Chain) -> None:
    """Attack "front-running": a third party copied the seller's pending collection and sent it
    first. The buyer's authorization is now payee-only (``receiveWithAuthorization``): a third
    party's submission fails either way, and the seller still collects. On our token and on USDC's."""
    buyer, seller, stranger = Account.create(), Account.create(), Account.create()
    await chain.fund(buyer.address, 1_000_000)
    for account in (seller, stranger):
        await chain.fund(account.address, 0)
    auth = await chain.authorize_transfer(buyer, seller.address, PRICE, os.urandom(32), 2**40)
    with pytest.raises(TransactionReverted, match="caller must be the payee"):
        await chain.receive_with_authorization(stranger, auth)
    with pytest.raises(TransactionReverted, match="invalid signature"):
        await chain.transfer_with_authorization(stranger, auth)
    await chain.receive_with_authorization(seller, auth)
    assert await chain.balance(seller.address) == PRICE and await chain.balance(stranger.address) == 0


class ChainThatLosesTheFirstReceipt:
    """Named fake, on the seller's side: its collection is mined, but the seller hears a revert (a
    lost receipt, a retry, or a copy of the payment that got there first): the money is its own."""

    def __init__(self, chain: Chain) -> None:
        self._chain = chain

    def __getattr__(self, name: str) -> Any:
        return getattr(self._chain, name)

    async def receive_with_authorization(self, payee: Account, auth: TransferAuthorization) -> Receipt:
        await self._chain.receive_with_authorization(payee, auth)
        return await self._chain.receive_with_authorization(payee, auth)  # reverts: authorization is used


class SellerWhoseCollectionRaces(Seller):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._chain = ChainThatLosesTheFirstReceipt(self._chain)  # type: ignore[assignment]


async def test_a_seller_whose_collection_was_already_mined_delivers(tmp_path: Path, chain: Chain) -> None:
    """The seller's submission reverted because the authorization was already used for exactly
    this payment to it: it was paid, so it delivers (before: 'the direct payment failed', the
    buyer paid for nothing)."""
    seller, buyer = await trade(tmp_path, chain, SellerWhoseCollectionRaces, payment="direct")
    try:
        result = await buyer.market.buy(
            seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
        )
        assert result.state == "completed" and (await buyer.store.get(str(result.crystal_id))).text == SKILL
        assert await chain.balance(seller.wallet.address) == PRICE
    finally:
        await close(buyer, seller)
