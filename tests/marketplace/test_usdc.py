"""Our market on Circle's FiatToken, the code real USDC runs, compiled from ../shared/usdc
(``marketplace.fiattoken``): what the real token does that our development token does not, and that
the market survives it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from marketplace.chain import Chain
from marketplace.chain_types import Account
from marketplace.errors import TransactionReverted
from marketplace.fiattoken.deploy import Governor, usdc_chain
from tests.marketplace.conftest import ANVIL, ARBITER, NO_ANVIL, anvil_process, need_fiattoken


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
