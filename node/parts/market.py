"""The marketplace as a part of the daemon: it builds the market's chain connection and the services
the market commands call (``marketplace.desk``), starts after the P2P part (whose host carries the
market protocol), and every ``resume_interval_s`` runs a market round (``marketplace.desk.rounds``).
A chain that cannot be reached does not stop the node: the market waits for it and says why in
``status``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ground.events import get_logger
from marketplace.desk.connection import MarketConnection, MarketInputs
from marketplace.desk.rounds import ROUND_ERRORS, market_round
from marketplace.desk.service import MarketDesk
from marketplace.desk.skill_ledger import SkillLedger
from marketplace.desk.skills import SkillDesk
from marketplace.exchange.market import Market
from marketplace.exchange.protocol import PROTOCOL
from marketplace.gossip.kinds import register_market_gossip
from marketplace.gossip.received_quota import bounties_bound, listings_bound
from marketplace.gossip.sink import MarketSink
from marketplace.wallet import load_or_create_wallet
from memory.governance.peer_quota import PeerContentQuota
from node.commands.market import MarketHost
from node.commands.skills_requests import SkillLedgerHost, SkillsHost
from node.config import Config
from node.parts.memory import MemoryPart
from node.parts.p2p import P2PPart
from node.runtime.context import NodeContext
from node.runtime.lifecycle import TaskSupervisor

log = get_logger("node.market")


class MarketPart:
    name = "market"

    def __init__(self, ctx: NodeContext, supervisor: TaskSupervisor, memory: MemoryPart, p2p: P2PPart) -> None:
        self._ctx = ctx
        self._supervisor = supervisor
        self._wallet = load_or_create_wallet(ctx.paths.data_dir / "wallet.key", ctx.key_passphrase)
        self.connection = MarketConnection(
            MarketInputs(
                ctx.identity, self._wallet, ctx.config.chain, ctx.config.marketplace,
                store=lambda: memory.store, host=lambda: p2p.host, standing=p2p.trust.has_standing,
            )
        )  # fmt: skip
        self.desk = MarketDesk(self.connection, memory.running_store)
        self.ledger = SkillLedger(memory.running_store, ctx.config.marketplace, p2p.reputation)
        self.skills = SkillDesk(
            p2p, memory.running_store, ctx.identity, self._wallet, ctx.config.marketplace, ctx.now_ms
        )
        self._last_round: dict[str, Any] = {}
        p2p.add_service(PROTOCOL, self._answer)
        register_market_gossip(p2p.gossip, market_sink(p2p, ctx.config))  # the market's kinds, consumed here

    def hosts(self) -> dict[str, Any]:
        """The services this part built, by the command set that calls them (typed here, so mypy
        checks each has what its commands call)."""
        market: MarketHost = self.desk
        ledger: SkillLedgerHost = self.ledger
        listings: SkillsHost = self.skills
        return {"market": market, "skills": ledger, "listings": listings}

    @property
    def market(self) -> Market | None:
        return self.connection.market

    async def start(self) -> None:
        if self._ctx.config.chain.url:
            await self.connection.connect()
        self._supervisor.spawn("market-rounds", self._rounds)

    async def stop(self) -> None:
        await self.connection.close()

    async def refresh(self) -> None:
        """Read the agent's spending anew for ``status`` (``details`` must not wait on the database)."""
        await self.desk.refresh()

    def details(self) -> dict[str, Any]:
        cfg = self._ctx.config.chain
        where = cfg.url or "embedded development chain (this process only)"
        error = self.connection.error
        if self.market is not None:
            state = "ready"
        elif not cfg.url and not error:
            state = "starts when a market command first needs it"
        else:
            state = f"chain unreachable: {error}"
        return {
            "chain": where,
            "address": self._wallet.address,
            "state": state,
            "last_round": dict(self._last_round),
            "spending": dict(self.desk.spending),
            "summary": f"wallet {self._wallet.address} on {where}, {state}{self.desk.summary()}",
        }

    async def _rounds(self) -> None:
        """Carry unfinished purchases on, refund what is due, settle sales; log what changed."""
        while True:
            if self.market is None and self._ctx.config.chain.url:
                await self.connection.connect()
            market = self.market
            if market is not None:
                withdraw_at = self._ctx.config.marketplace.withdraw_at_micro_usdc
                try:
                    self._last_round = await market_round(market, withdraw_at=withdraw_at, clock=self._ctx.now_ms)
                except ROUND_ERRORS as exc:
                    log.warning("market.round_failed", error=str(exc))
            await asyncio.sleep(self._ctx.config.chain.resume_interval_s)

    async def _answer(self, peer: str, request: bytes) -> bytes:
        if self.market is None:
            raise ConnectionError("the marketplace is not ready (no chain)")  # the stream resets; the buyer retries
        return await self.market.answer(peer, request)


def market_sink(p2p: P2PPart, config: Config) -> MarketSink:
    """What the market's gossip consumers fill: the store, bounded by config, counted in the network
    part's ``ingested`` and ``evicted`` (one ``peers``/``status`` report for everything peers sent)."""
    cfg = config.p2p
    return MarketSink(
        store=p2p.store,
        level_of=p2p.level_of_key,
        standing_of=p2p.trust_standing_of,
        me_hex=p2p.ctx.identity.public_key.hex(),
        content_quota=PeerContentQuota(
            per_author_crystals=cfg.peer_content_per_author,
            per_author_bytes=cfg.peer_content_bytes_per_author,
            total_crystals=cfg.peer_content_total,
            total_bytes=cfg.peer_content_bytes_total,
        ),
        listings_bound=listings_bound(cfg.listings_per_seller, cfg.listings_total),
        bounties_bound=bounties_bound(cfg.bounties_per_author, cfg.bounties_total),
        ingested=p2p.ingested,
        evicted=p2p.evicted,
    )
