"""Named public test networks: what ``[chain] preset`` fills in and checks (pure).

A preset names a chain by its id and the real USDC deployed there, so a node pointed at the wrong
RPC (another chain, or another token at that address) refuses to start rather than trade. The
escrow is ours, deployed by whoever runs the market there: its address stays in the config.

Base Sepolia (an OP-stack L2, a block every 2 s). Its sequencer can reorder or drop blocks that are
not yet posted to L1 (the "unsafe" head, a few minutes long); events are acted on only once
``confirmations`` blocks deep, and the last ``reorg_blocks`` are read again each round, so an
event that a reorg moved to a later block is still seen (acting on one twice is harmless: a
resolved deal refuses a second resolution, and ``Chain.send`` simulates before it pays). Gas there
costs about 0.001-0.01 gwei; ``max_gas_price_gwei`` refuses to send above the cap, so a gas spike
(or a hostile RPC quoting one) cannot drain the wallet's ether.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ChainPreset:
    name: str
    chain_id: int
    usdc_address: str
    confirmations: int  # blocks an event must lie under the head before this node acts on it
    reorg_blocks: int  # blocks read again each round, under the confirmed head
    max_gas_price_gwei: float  # refuse to send a transaction priced above this
    #: One deal's events are looked for newest first, this many blocks a query (public RPCs refuse
    #: a query from block 0), at most ``log_lookback`` blocks back.
    log_chunk_blocks: int
    log_lookback: int


BASE_SEPOLIA = ChainPreset(
    name="base-sepolia",
    chain_id=84532,
    usdc_address="0x036CbD53842c5426634e7929541eC2318f3dCF7e",  # Circle's USDC on Base Sepolia
    confirmations=10,  # 20 s
    reorg_blocks=300,  # 10 min: longer than the unsafe head usually runs ahead of L1
    max_gas_price_gwei=2.0,
    log_chunk_blocks=10_000,  # what public Base RPCs take in one eth_getLogs
    log_lookback=400_000,  # 9.3 days: a lock (1 day at most), the dispute window and 7 days of arbitration
)

PRESETS: dict[str, ChainPreset] = {BASE_SEPOLIA.name: BASE_SEPOLIA}


@dataclass(frozen=True, slots=True)
class ChainTuning:
    """What a node sets on its chain client: a preset's values, the config's overrides, or a dev
    chain's zeros (act at once, no cap, one query from block 0)."""

    chain_id: int | None = None  # the chain the RPC must be
    confirmations: int = 0
    reorg_blocks: int = 0
    max_gas_price_wei: int = 0
    log_chunk_blocks: int = 0
    log_lookback: int = 0

    def apply(self, chain: Any) -> None:
        """Set these on ``chain`` (a ``marketplace.chain.Chain``)."""
        chain.confirmations, chain.reorg_blocks = self.confirmations, self.reorg_blocks
        chain.max_gas_price_wei = self.max_gas_price_wei
        chain.log_chunk_blocks, chain.log_lookback = self.log_chunk_blocks, self.log_lookback


def gwei(value: float) -> int:
    """``value`` gwei in wei."""
    return round(value * 10**9)
