"""The chain client on the embedded EVM running our own compiled contracts."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from web3 import Web3

from marketplace.chain import Chain, artifact
from marketplace.chain_types import Account
from marketplace.errors import ChainError, ChainUnreachable, InsufficientFunds
from tests.marketplace.conftest import ANVIL, ARBITER, NO_ANVIL, anvil_process, funds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["DevUSDC", "Escrow"])
def test_committed_artifacts_are_built_from_the_sources_beside_them(name: str) -> None:
    source = (ROOT / "contracts" / f"{name}.vy").read_bytes()
    doc = artifact(name)
    assert doc["source_sha256"] == hashlib.sha256(source).hexdigest(), "run python contracts/compile.py"
    assert doc["compiler"] == "vyper 0.4.3" and doc["bytecode"].startswith("0x")


@pytest.fixture
async def buyer(chain: Chain) -> Account:
    account = Account.create()
    await chain.fund(account.address, 5_000_000)  # 5 USDC
    return account


async def test_a_usdc_like_token_with_six_decimals(chain: Chain, buyer: Account) -> None:
    seller = Account.create()
    await chain.transfer(buyer, seller.address, 1_250_000)
    assert (await chain.balance(buyer.address), await funds(chain, seller.address)) == (3_750_000, 1_250_000)
    with pytest.raises(InsufficientFunds, match="exceeds balance"):
        await chain.transfer(buyer, seller.address, 3_750_001)
    assert await chain.balance(buyer.address) == 3_750_000  # a refused transfer moves nothing
    with pytest.raises(ValueError, match="integer micro-USDC"):
        await chain.transfer(buyer, seller.address, 1.5)  # type: ignore[arg-type]


async def test_dev_only_operations_are_refused_on_a_real_chain_client(chain: Chain) -> None:
    real = Chain(chain._w3, chain.token_address, chain.escrow_address, dev=False)
    with pytest.raises(Exception, match="embedded development chain only"):
        await real.fund(Account.create().address, 1)


async def test_an_unreachable_rpc_chain_is_a_clear_error_and_leaves_no_worker() -> None:
    before = {t.name for t in threading.enumerate()}
    with pytest.raises(ChainError, match=r"no chain answers at http://127\.0\.0\.1:9"):
        await Chain.rpc("http://127.0.0.1:9", "0x" + "00" * 20, "0x" + "00" * 20)
    await asyncio.sleep(0.1)
    assert {t.name for t in threading.enumerate() if t.name.startswith("evm")} <= before


@pytest.mark.skipif(ANVIL is None, reason=NO_ANVIL)
async def test_a_chain_that_goes_away_is_unreachable_not_a_revert() -> None:
    buyer = Account.create()
    with anvil_process() as url:
        chain = await Chain.rpc_dev(url, arbiter=ARBITER.address)
    try:  # anvil is stopped now
        with pytest.raises(ChainUnreachable, match=f"cannot reach {url}"):
            await chain.balance(buyer.address)
        with pytest.raises(ChainUnreachable, match=f"cannot reach {url}"):
            await chain.fund(buyer.address, 1_000_000)  # a transaction: not mistaken for a revert
        assert isinstance(ChainUnreachable("x"), ConnectionError)  # the daemon answers it with 502, unlogged
    finally:
        await chain.close()


#: A contract that answers every call with the uint256 18 (an 18-decimals token, for decimals()):
#: runtime 60126000526020 6000f3, deployed by init code that returns those 10 bytes.
ANSWERS_18 = "0x" + "69" + "601260005260206000f3" + "600052600a6016f3"


def deploy_raw(url: str, init_code: str) -> str:
    """Deploy ``init_code`` from anvil's first (unlocked) account, over plain JSON-RPC; its address."""

    def rpc(method: str, *params: object) -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())["result"]

    accounts = rpc("eth_accounts")
    assert isinstance(accounts, list)
    tx = rpc("eth_sendTransaction", {"from": accounts[0], "data": init_code, "gas": hex(200_000)})
    deadline = time.monotonic() + 10
    while (receipt := rpc("eth_getTransactionReceipt", tx)) is None and time.monotonic() < deadline:
        time.sleep(0.05)  # anvil mines it at once, and reports it a moment later
    assert isinstance(receipt, dict)
    return Web3.to_checksum_address(receipt["contractAddress"])


@pytest.mark.skipif(ANVIL is None, reason=NO_ANVIL)
async def test_a_token_or_escrow_that_is_not_ours_is_refused_by_address() -> None:
    """Finding 7: only code at the two addresses was checked, not the token's decimals nor the
    escrow's token."""
    with anvil_process() as url:
        first, second = (
            await Chain.rpc_dev(url, arbiter=ARBITER.address),
            await Chain.rpc_dev(url, arbiter=ARBITER.address),
        )  # two deployments on one chain
        await second.close()
        try:
            await (await Chain.rpc(url, first.token_address, first.escrow_address)).close()  # ours: accepted
            with pytest.raises(ChainError, match=f"the escrow at {first.escrow_address} holds the token"):
                await Chain.rpc(url, second.token_address, first.escrow_address)
            with pytest.raises(ChainError, match=f"the token address {first.escrow_address} does not answer decimals"):
                await Chain.rpc(url, first.escrow_address, first.escrow_address)
            eighteen = deploy_raw(url, ANSWERS_18)
            with pytest.raises(ChainError, match=f"the token at {eighteen} has 18 decimals; USDC has 6"):
                await Chain.rpc(url, eighteen, first.escrow_address)
        finally:
            await first.close()
