"""The marketplace's two tables of the config file, each the union of the components it configures
(``ground.settings``): ``[marketplace]`` for pricing, selling and spending, ``[chain]`` for the
chain client and the escrow deadlines. The node hands each whole table to each component."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ground.settings import SettingError
from marketplace.limits import DeadlineBounds, SellerLimits, SpendLimits
from marketplace.pricing import PriceSettings
from marketplace.public_chain.presets import PRESETS, ChainTuning, gwei

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


class MarketplaceSettings(SellerLimits, SpendLimits, PriceSettings):
    """``[marketplace]``: prices (``PriceSettings``), what a purchase may cost (``SpendLimits``), what
    a peer may ask of this node as a seller (``SellerLimits``), and how sales are paid."""

    # Sales are paid into the escrow (one storage write, not a transfer); the node withdraws them
    # to its wallet once they reach this much, in one transaction. 0: only on `wallet withdraw`.
    withdraw_at_micro_usdc: int = Field(default=1_000_000, ge=0, le=10**12)
    """As a seller: escrowed sales are paid into the escrow (what it owes this node) and withdrawn
    to the wallet in one transaction once they reach this much; 0: only by `wallet withdraw`.
    This node's own escrow purchases spend that credit first. Default: 1 USDC.
    """
    payment: Literal["escrow", "direct"] = "escrow"
    """How this node pays when it buys. "escrow": the price is locked in the escrow contract and
    released after the skill arrives and checks out (refunded after [chain] escrow_window_s if
    not). "direct": a signed USDC transferWithAuthorization the seller collects before it
    delivers; one transaction fewer, but no refund: use it only with sellers you trust.
    """


class ChainSettings(DeadlineBounds):
    """``[chain]``: which chain the market settles on, how far its events are trusted, and the escrow
    deadlines this node accepts (``DeadlineBounds``)."""

    url: str = ""
    """Where purchases settle. Empty url: the embedded development chain, an EVM inside this
    process with our DevUSDC token and escrow deployed at start. It needs no service, but
    no other node can see it: to buy from or sell to other nodes, every node points at the
    same JSON-RPC chain. Locally that is anvil (README: "Buying and selling between nodes"):
      bitterbot-node chain deploy --url http://127.0.0.1:8545   prints the two addresses.
    """
    # A public test network by name (marketplace/public_chain/presets.py): "base-sepolia" checks the
    # chain id (84532), takes its real USDC as token_address, and sets the three keys below when
    # they are left unset. escrow_address stays ours to give.
    preset: Literal["", "base-sepolia"] = ""
    """A public test network by name: "base-sepolia" requires its chain id (84532) and takes its real
    USDC as the token, with the confirmations, reorg depth and gas cap below set for it.
    """
    # Blocks an escrow event must lie under the head before this node acts on it, and blocks read
    # again below that each round (an event a reorg moved is still seen). -1: the preset's, else 0.
    confirmations: int = Field(default=-1, ge=-1, le=10_000)
    """Blocks deep an escrow event must be before the node acts on it, and blocks re-read below that
    each round, so an event a reorg moved is still seen. -1: the preset's, else 0.
    """
    reorg_blocks: int = Field(default=-1, ge=-1, le=100_000)
    # Nothing is sent while the chain's gas price is above this (a spike, or a hostile RPC quoting
    # one, cannot drain the wallet's ether). -1: the preset's, else no cap.
    max_gas_price_gwei: float = Field(default=-1, ge=-1, le=100_000)
    """The most the node pays for gas, in gwei: above it nothing is sent (a chain whose gas spikes, or
    a hostile RPC, cannot drain the wallet's ether). -1: the preset's, else no cap.
    """
    token_address: str = ""
    """The USDC token and escrow contract addresses on that chain (required with a url)."""
    escrow_address: str = ""
    dev: bool = False
    """true only for a local development chain whose DevUSDC can be minted (`wallet fund`)."""
    escrow_window_s: int = Field(default=600, ge=60, le=30 * 86_400)
    """How long a buyer's payment stays locked before it can be refunded, in seconds (what this
    node quotes as a seller; between the two bounds below).
    """
    receipt_timeout_s: float = Field(default=30.0, ge=1, le=600)
    """How long a transaction's receipt is waited for; after that it is pending (not failed) and
    resume reconciles it with the chain by purchase id.
    """
    resume_interval_s: float = Field(default=30.0, gt=0, le=3_600)
    """How often unfinished purchases are carried on and sales settled, in seconds."""

    @field_validator("url")
    @classmethod
    def _http(cls, url: str) -> str:
        if url and not url.startswith(("http://", "https://")):
            raise SettingError(f"{url!r} is not an http(s) JSON-RPC URL (like http://127.0.0.1:8545)")
        return url

    @model_validator(mode="after")
    def _window_within_bounds(self) -> ChainSettings:
        if not self.min_delivery_window_s <= self.escrow_window_s <= self.max_lock_s:
            raise SettingError(
                f"escrow_window_s ({self.escrow_window_s}) must lie between min_delivery_window_s "
                f"({self.min_delivery_window_s}) and max_lock_s ({self.max_lock_s})"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _preset_token(cls, data: Any) -> Any:
        """A preset's real USDC is the token, unless the file names one (checked below)."""
        if isinstance(data, dict) and (preset := PRESETS.get(data.get("preset", ""))) is not None:
            return {"token_address": preset.usdc_address, **data}
        return data

    @model_validator(mode="after")
    def _preset(self) -> ChainSettings:
        preset = PRESETS.get(self.preset)
        if preset is None:
            return self
        if not self.url:
            raise SettingError(f"[chain] preset = {self.preset!r} needs the url of an RPC of that network")
        if self.token_address.lower() != preset.usdc_address.lower():
            raise SettingError(
                f"{self.preset}'s USDC is {preset.usdc_address}, not {self.token_address}: leave token_address unset"
            )
        if self.dev:
            raise SettingError(f"{self.preset} is a public network, not a dev chain: set dev = false")
        return self

    @model_validator(mode="after")
    def _addresses(self) -> ChainSettings:
        if self.url:
            for name in ("token_address", "escrow_address"):
                if not _ADDRESS.fullmatch(getattr(self, name)):
                    raise SettingError(
                        f"with a chain url, {name} must be the 0x-prefixed contract address "
                        "(`bitterbot-node chain deploy --url URL` deploys ours on a dev chain and prints both)"
                    )
        elif self.dev or self.token_address or self.escrow_address:
            raise SettingError(
                "token_address, escrow_address and dev belong to a chain url; the embedded chain has its own"
            )
        return self

    def settled(self) -> ChainTuning:
        """What the chain client is set to: the keys left unset take the preset's values, or a dev
        chain's (0)."""
        preset = PRESETS.get(self.preset)
        if preset is None:
            return ChainTuning(None, max(self.confirmations, 0), max(self.reorg_blocks, 0),
                               gwei(max(self.max_gas_price_gwei, 0)))  # fmt: skip

        def pick(value: float, preset_value: float) -> float:
            return value if value >= 0 else preset_value

        return ChainTuning(
            preset.chain_id, int(pick(self.confirmations, preset.confirmations)),
            int(pick(self.reorg_blocks, preset.reorg_blocks)), gwei(pick(self.max_gas_price_gwei,
            preset.max_gas_price_gwei)), preset.log_chunk_blocks, preset.log_lookback,
        )  # fmt: skip
