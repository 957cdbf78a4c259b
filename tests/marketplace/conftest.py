from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ground.clock import Clock
from marketplace.chain import Chain
from marketplace.chain_types import Account
from marketplace.escrow import Escrow
from marketplace.fiattoken.anvil import ANVIL as ANVIL  # the tests import these from here
from marketplace.fiattoken.anvil import NO_ANVIL as NO_ANVIL
from marketplace.fiattoken.anvil import anvil_process as anvil_process
from marketplace.fiattoken.build import FiatTokenUnavailable, artifacts
from marketplace.fiattoken.deploy import deploy_token, usdc_chain
from marketplace.schema import MARKET_SCHEMA
from memory.embedders.hashing import HashingEmbedder
from memory.graph.links import auto_link
from memory.intake.store import IntakeStore

#: Who decides disputes on the test chains (a key the tests hold, so they can resolve as it).
ARBITER = Account.from_key(bytes(31) + b"\x07")


async def funds(chain: Chain, address: str) -> int:
    """Micro-USDC ``address`` holds: in its wallet, plus its paid sales the escrow owes it."""
    return await chain.balance(address) + await Escrow(chain).owed(address)


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[IntakeStore]:
    """A real store holding the marketplace's tables too, as a node opens it."""
    s = await IntakeStore.open(
        tmp_path / "memory.db", HashingEmbedder(), now_ms=clock, on_embedded=auto_link, schemas=(MARKET_SCHEMA,)
    )
    try:
        yield s
    finally:
        await s.close()


def need_fiattoken() -> None:
    """Skip, saying why, where Circle's token cannot be built (no ../shared/usdc, no solc-js)."""
    try:
        artifacts()
    except FiatTokenUnavailable as exc:
        pytest.skip(f"Circle's FiatToken is unavailable: {exc}")


@contextlib.contextmanager
def anvil_holding_usdc(name: str = "USDC", decimals: int = 6) -> Iterator[tuple[str, str]]:
    """An anvil where Circle's token is already deployed, as USDC is on a public test network (named
    as on Base: not our default); yields its URL and the token's address. Skips where it cannot be."""
    if ANVIL is None:
        pytest.skip(NO_ANVIL)
    need_fiattoken()
    from web3 import Web3

    with anvil_process() as url:
        w3 = Web3(Web3.HTTPProvider(url))
        yield url, deploy_token(w3, w3.eth.accounts[0], name=name, decimals=decimals)


ON_ANVIL = pytest.mark.skipif(ANVIL is None, reason=NO_ANVIL)


@contextlib.asynccontextmanager
async def _on_anvil(token: str) -> AsyncIterator[Chain]:
    """A fresh anvil with our escrow on ``token``: "anvil" (our development token) or "usdc"
    (Circle's FiatToken, skipped where it cannot be built)."""
    if token == "usdc":
        need_fiattoken()
    with anvil_process() as url:
        if token == "usdc":  # named as on Base, not as a client might assume ("USD Coin")
            c = await usdc_chain(url, arbiter=ARBITER.address, name="USDC")
        else:
            c = await Chain.rpc_dev(url, arbiter=ARBITER.address)
        try:
            yield c
        finally:
            await c.close()


@pytest.fixture(params=["embedded", pytest.param("anvil", marks=ON_ANVIL), pytest.param("usdc", marks=ON_ANVIL)])
async def chain(request: pytest.FixtureRequest) -> AsyncIterator[Chain]:
    """A fresh chain with our escrow deployed: on our token in the embedded EVM and on a real anvil
    when installed, and on Circle's FiatToken (the code real USDC runs) on anvil."""
    if request.param == "embedded":
        c = await Chain.embedded(arbiter=ARBITER.address)
        try:
            yield c
        finally:
            await c.close()
        return
    async with _on_anvil(request.param) as c:
        yield c


@pytest.fixture(params=[pytest.param("anvil", marks=ON_ANVIL), pytest.param("usdc", marks=ON_ANVIL)])
async def anvil_client(request: pytest.FixtureRequest) -> AsyncIterator[Chain]:
    """A fresh anvil with our escrow, on our token and on Circle's FiatToken: for what the embedded
    EVM cannot do (hold a transaction unmined: eth-tester re-validates it with a check too narrow
    for the chain id it signs with)."""
    async with _on_anvil(request.param) as c:
        yield c


async def idle(chain: Chain, seconds: int) -> None:
    """Let ``seconds`` pass on a chain that mines only when there are transactions: nothing is
    mined, so the latest block grows stale while the next block will carry the time it is mined at
    (anvil: ``evm_increaseTime`` without a block; the embedded EVM: its pending header, moved)."""

    def wait() -> None:
        tester = getattr(chain.w3.provider, "ethereum_tester", None)
        if tester is None:
            chain.w3.provider.make_request("evm_increaseTime", [seconds])
            return
        backend = tester.backend
        backend.chain.header = backend.chain.header.copy(timestamp=backend.chain.header.timestamp + seconds)

    await chain.run(wait)
