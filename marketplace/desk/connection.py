"""The market's connection to its chain: the chain named by ``[chain]``, or the embedded development
chain, built when a command first needs it (it cannot trade with other nodes, and building it cost
each start about a second of a core and the EVM's memory: most nodes never use it).

A chain that cannot be reached, or an escrow whose rules this node's deadline bounds do not fit,
leaves the market unbuilt and says why (``error``): the node keeps running and tries again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from crypto.identity import Identity
from ground.events import get_logger
from marketplace.chain import Chain
from marketplace.chain_types import Account
from marketplace.errors import ChainError, MarketUnavailable
from marketplace.escrow import Escrow
from marketplace.exchange.market import Market
from marketplace.exchange.party import Standing
from marketplace.settings import ChainSettings, MarketplaceSettings
from memory.intake.store import IntakeStore
from p2p.host import P2PHost

log = get_logger("node.market")  # the name the market's events have always had


@dataclass(frozen=True, slots=True)
class MarketInputs:
    """What a market is built with: this node's keys and wallet, its two tables of settings, and the
    store and host of the parts it runs on (None until they run)."""

    identity: Identity
    wallet: Account
    chain: ChainSettings
    market: MarketplaceSettings
    store: Callable[[], IntakeStore | None]
    host: Callable[[], P2PHost | None]
    standing: Standing


class MarketConnection:
    """The ``Market`` once its chain is connected (``market``), else why not (``error``)."""

    def __init__(self, inputs: MarketInputs) -> None:
        self.inputs = inputs
        self.market: Market | None = None
        self.error = ""
        self._connecting = asyncio.Lock()  # two first commands at once build one embedded chain

    async def connect(self) -> None:
        """Connect the configured chain (or build the embedded one) and build the market on it; on
        failure ``market`` stays None and ``error`` says why."""
        cfg = self.inputs.chain
        try:
            if cfg.url:
                tuning = cfg.settled()
                chain = await Chain.rpc(
                    cfg.url, cfg.token_address, cfg.escrow_address, dev=cfg.dev, chain_id=tuning.chain_id
                )
                tuning.apply(chain)
            else:
                chain = await Chain.embedded()
        except ChainError as exc:
            if self.error != str(exc):
                log.error("market.chain_unreachable", url=cfg.url, error=str(exc))
            self.error = str(exc)
            return
        chain.receipt_timeout_s = cfg.receipt_timeout_s
        try:
            mismatch = cfg.outside(await Escrow(chain).rules()) or await Escrow(chain).arbiter_refusal()
        except ChainError as exc:
            mismatch = str(exc)
        if mismatch is not None:
            await chain.close()
            if self.error != mismatch:
                log.error("market.escrow_bounds", escrow=chain.escrow_address, error=mismatch)
            self.error = mismatch
            return
        store, host = self.inputs.store(), self.inputs.host()
        if store is None or host is None:
            await chain.close()
            self.error = "the memory store or the p2p host is not running"
            return
        self.market = self._build(chain, store, host)
        self.error = ""
        log.info("market.ready", chain=cfg.url or "embedded", address=self.inputs.wallet.address)

    def _build(self, chain: Chain, store: IntakeStore, host: P2PHost) -> Market:
        cfg, settings = self.inputs.chain, self.inputs.market
        return Market(
            self.inputs.identity, self.inputs.wallet, store, chain, host,
            escrow_window_s=cfg.escrow_window_s, bounds=cfg, payment=settings.payment, limits=settings,
            spend_limits=settings, round_interval_s=cfg.resume_interval_s, standing=self.inputs.standing,
        )  # fmt: skip

    async def start_embedded(self) -> None:
        """Build the embedded development chain if this node has no chain url and no market yet."""
        if self.market is None and not self.inputs.chain.url:
            async with self._connecting:
                if self.market is None:
                    await self.connect()

    async def ready(self) -> Market:
        """The market, connecting the embedded chain first if that is this node's; or
        ``MarketUnavailable`` (503) saying why there is none."""
        await self.start_embedded()
        if self.market is None:
            raise MarketUnavailable(f"the marketplace has no chain: {self.error}")
        return self.market

    async def close(self) -> None:
        if self.market is not None:
            chain, self.market = self.market.chain, None
            await chain.close()
