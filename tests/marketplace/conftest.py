from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from ground.clock import Clock
from marketplace.chain import Chain
from marketplace.chain_types import Account
from marketplace.escrow import Escrow
from marketplace.schema import MARKET_SCHEMA
from memory.embedders.hashing import HashingEmbedder
from memory.graph import auto_link
from memory.storage.store import MemoryStore

ANVIL = shutil.which("anvil")
#: Who decides disputes on the test chains (a key the tests hold, so they can resolve as it).
ARBITER = Account.from_key(bytes(31) + b"\x07")


async def funds(chain: Chain, address: str) -> int:
    """Micro-USDC ``address`` holds: in its wallet, plus its paid sales the escrow owes it."""
    return await chain.balance(address) + await Escrow(chain).owed(address)


NO_ANVIL = "anvil is not installed (npm install -g @foundry-rs/anvil, see the README)"


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[MemoryStore]:
    """A real store holding the marketplace's tables too, as a node opens it."""
    s = await MemoryStore.open(
        tmp_path / "memory.db", HashingEmbedder(), now_ms=clock, on_embedded=auto_link, schemas=(MARKET_SCHEMA,)
    )
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture(params=["embedded", pytest.param("anvil", marks=pytest.mark.skipif(ANVIL is None, reason=NO_ANVIL))])
async def chain(request: pytest.FixtureRequest) -> AsyncIterator[Chain]:
    """A fresh chain with our contracts deployed: the embedded EVM, and a real anvil when installed."""
    if request.param == "embedded":
        c = await Chain.embedded(arbiter=ARBITER.address)
        try:
            yield c
        finally:
            await c.close()
        return
    with anvil_process() as url:
        c = await Chain.rpc_dev(url, arbiter=ARBITER.address)
        try:
            yield c
        finally:
            await c.close()


@pytest.fixture
async def anvil_client() -> AsyncIterator[Chain]:
    """A fresh anvil with our contracts: for what the embedded EVM cannot do (hold a transaction
    unmined: eth-tester re-validates it with a check too narrow for the chain id it signs with)."""
    if ANVIL is None:
        pytest.skip(NO_ANVIL)
    with anvil_process() as url:
        c = await Chain.rpc_dev(url, arbiter=ARBITER.address)
        try:
            yield c
        finally:
            await c.close()


@contextlib.contextmanager
def anvil_process(*options: str) -> Iterator[str]:
    """A real anvil on a free loopback port (with ``options``, e.g. ``--chain-id 84532``), stopped
    (and waited for) at the end."""
    assert ANVIL is not None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [ANVIL, "--host", "127.0.0.1", "--port", str(port), "--silent", *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("anvil did not start within 20 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


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
