"""The node's configuration: typed sections with their defaults (the embedded config that
`bitterbot-node run` uses with no file) and their checks. ``node.config_loading`` reads them from
one TOML file and the environment.

Every field is documented in ``configs/edge.toml``; a test keeps that file equal to these defaults.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ground.settings import Section
from marketplace.public_chain.presets import PRESETS, ChainTuning, gwei
from memory import design
from node.errors import InvalidValue
from p2p.settings import P2PSettings, TrustSettings, WireSettings

_Section = Section


class NodeSection(_Section):
    name: str = Field(default="bitterbot-node", min_length=1, max_length=64)
    role: Literal["edge", "management"] = "edge"
    data_dir: str = ""
    status_interval_s: float = Field(default=2.0, gt=0, le=60)
    shutdown_timeout_s: float = Field(default=4.0, gt=0, le=60)


LogLevel = Literal["debug", "info", "warning", "error"]


class LogSection(_Section):
    level: LogLevel = "info"
    format: Literal["text", "json"] = "text"
    parts: dict[str, LogLevel] = Field(default_factory=dict)


class IdentitySection(_Section):
    key_file: str = Field(default="identity.key", min_length=1)


class MemorySection(_Section):
    db_file: str = Field(default="memory/crystals.db", min_length=1)
    embedder: Literal["minilm", "hashing", "openai"] = "minilm"
    openai_url: str = ""
    openai_model: str = ""
    openai_api_key_env: str = "OPENAI_API_KEY"
    openai_dimensions: int = Field(default=0, ge=0, le=8192)
    related_threshold: float = Field(default=design.RELATED_LINK_SIMILARITY, gt=0, le=1)
    updates_threshold: float = Field(default=design.UPDATES_LINK_SIMILARITY, gt=0, le=1)
    embed_batch: int = Field(default=64, ge=1, le=1024)
    # The daemon runs a local model (minilm) in a worker process, started when a text first needs it
    # and let go after this many seconds unused, so an idle daemon holds none of it; 0 keeps it.
    embedder_idle_s: float = Field(default=300.0, ge=0, le=86_400)
    # Run MiniLM's weights as float32, unpacked from int8 once per machine (memory/embedders/minilm_fold):
    # a query embeds in ~3 ms instead of ~50; off, each run unpacks them again (configs/edge.toml).
    minilm_fold_weights: bool = True
    rrf_k: int = Field(default=10, ge=1, le=1000)
    vector_weight: float = Field(default=0.7, ge=0, le=10)
    relevance_floor: float = Field(default=0.3, ge=0, le=1)
    max_curiosity_gaps: int = Field(default=200, ge=1, le=100_000)
    typer: Literal["offline", "llm"] = "offline"
    # A newer crystal that updates an older one supersedes it (memory.supersession): "offline" judges
    # by wording and similarity, "llm" also asks [llm] about ambiguous choices, "off" never does.
    supersession: Literal["offline", "llm", "off"] = "offline"


class CaptureSection(_Section):
    # Folders of transcripts the daemon follows and captures as they are written (memory.capture.watch),
    # e.g. ["~/.claude/projects"]: *.jsonl and *.json files under them, at any depth.
    watch: list[str] = Field(default_factory=list, max_length=32)
    poll_s: float = Field(default=5.0, ge=0.2, le=3600)
    max_file_mb: int = Field(default=50, ge=1, le=10_000)
    # The longest line of a JSONL input read (a watched transcript, a JSONL import, an export restored):
    # a longer one is read past in blocks, never held whole, and skipped and counted like a damaged line.
    max_line_mb: int = Field(default=8, ge=1, le=1_000)
    # "llm": the [llm] endpoint picks the statements worth keeping, checked against the messages
    # (memory.capture.llm_extract); offline, deterministic, when it fails or a message is confidential.
    extractor: Literal["offline", "llm"] = "offline"


class LlmSection(_Section):
    """An OpenAI-compatible chat endpoint for ``[memory] typer = "llm"`` and ``supersession = "llm"``."""

    url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(default=10.0, gt=0, le=600)


class HormonesSection(_Section):
    dopamine_half_life_min: float = Field(default=30.0, gt=0, le=10_080)
    cortisol_half_life_min: float = Field(default=60.0, gt=0, le=10_080)
    oxytocin_half_life_min: float = Field(default=45.0, gt=0, le=10_080)
    dopamine_home: float = Field(default=0.15, ge=0, le=1)
    cortisol_home: float = Field(default=0.02, ge=0, le=1)
    oxytocin_home: float = Field(default=0.10, ge=0, le=1)


class ConsolidationSection(_Section):
    interval_min: float = Field(default=30.0, gt=0, le=10_080)
    decay_rate_per_ms: float = Field(default=design.DECAY_RATE_PER_MS, ge=0, le=1e-6)
    forget_threshold: float = Field(default=design.FORGET_THRESHOLD, ge=0, lt=1)
    promote_threshold: float = Field(default=design.PROMOTE_THRESHOLD, gt=0, le=1)
    merge_similarity: float = Field(default=design.MERGE_SIMILARITY, gt=0, le=1)
    emotion_decay_resistance: float = Field(default=design.EMOTION_DECAY_RESISTANCE, ge=0, lt=1)
    retention_days: int = Field(default=30, ge=0, le=3_650)

    @model_validator(mode="after")
    def _forget_below_promote(self) -> ConsolidationSection:
        if self.forget_threshold >= self.promote_threshold:
            raise InvalidValue("forget_threshold must be below promote_threshold")
        return self


class DreamSection(_Section):
    interval_min: float = Field(default=120.0, gt=0, le=10_080)
    workspace_dir: str = Field(default="workspace", min_length=1)
    synthesizer: Literal["extractive", "chat"] = "extractive"
    chat_url: str = ""
    chat_model: str = ""
    chat_api_key_env: str = "OPENAI_API_KEY"
    chat_timeout_s: float = Field(default=60.0, gt=0, le=600)

    @model_validator(mode="after")
    def _chat_needs_endpoint(self) -> DreamSection:
        if self.synthesizer == "chat" and not (self.chat_url and self.chat_model):
            raise InvalidValue('synthesizer = "chat" needs chat_url and chat_model')
        return self


class MarketplaceSection(_Section):
    base_price_micro_usdc: int = Field(default=10_000, ge=1, le=10**12)
    min_price_micro_usdc: int = Field(default=1_000, ge=1, le=10**12)
    max_price_micro_usdc: int = Field(default=100_000_000, ge=1, le=10**12)
    # The most `skills buy` pays without --max-price (a listing may ask up to 10^12 micro-USDC);
    # only the person may pass a --max-price above it (the agent never spends past it).
    max_purchase_micro_usdc: int = Field(default=1_000_000, ge=1, le=10**12)
    # What the agent's purchases of the last 24 hours may add up to; the person's do not count.
    agent_daily_budget_micro_usdc: int = Field(default=3_000_000, ge=0, le=10**12)
    # Sales are paid into the escrow (one storage write, not a transfer); the node withdraws them
    # to its wallet once they reach this much, in one transaction. 0: only on `wallet withdraw`.
    withdraw_at_micro_usdc: int = Field(default=1_000_000, ge=0, le=10**12)
    payment: Literal["escrow", "direct"] = "escrow"
    seller_requests_per_min: float = Field(default=12.0, gt=0, le=6_000)
    seller_request_burst: int = Field(default=5, ge=1, le=1_000)
    max_open_quotes: int = Field(default=100, ge=1, le=100_000)
    max_open_quotes_per_buyer: int = Field(default=3, ge=1, le=1_000)
    # Of max_open_quotes, how many buyers without standing here (never paid this node, not
    # trusted) may hold at once: fresh keys cost nothing and must not lock out known buyers.
    max_open_quotes_strangers: int = Field(default=40, ge=1, le=100_000)
    # Strangers must prove their wallet (it signs the request) holds the price, read from the chain
    # (a balance that covers it is kept quote_funds_cache_s); one open quote per such wallet.
    # Strangers without the proof (an earlier release) share max_open_quotes_unproven.
    max_open_quotes_per_stranger_wallet: int = Field(default=1, ge=1, le=1_000)
    max_open_quotes_unproven: int = Field(default=10, ge=0, le=100_000)
    quote_funds_cache_s: float = Field(default=30.0, ge=0, le=3_600)

    @model_validator(mode="after")
    def _range(self) -> MarketplaceSection:
        if not self.min_price_micro_usdc <= self.base_price_micro_usdc <= self.max_price_micro_usdc:
            raise InvalidValue("need min_price_micro_usdc <= base_price_micro_usdc <= max_price_micro_usdc")
        return self


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


class ChainSection(_Section):
    url: str = ""
    # A public test network by name (marketplace/public_chain/presets.py): "base-sepolia" checks the
    # chain id (84532), takes its real USDC as token_address, and sets the three keys below when
    # they are left unset. escrow_address stays ours to give.
    preset: Literal["", "base-sepolia"] = ""
    # Blocks an escrow event must lie under the head before this node acts on it, and blocks read
    # again below that each round (an event a reorg moved is still seen). -1: the preset's, else 0.
    confirmations: int = Field(default=-1, ge=-1, le=10_000)
    reorg_blocks: int = Field(default=-1, ge=-1, le=100_000)
    # Nothing is sent while the chain's gas price is above this (a spike, or a hostile RPC quoting
    # one, cannot drain the wallet's ether). -1: the preset's, else no cap.
    max_gas_price_gwei: float = Field(default=-1, ge=-1, le=100_000)
    token_address: str = ""
    escrow_address: str = ""
    dev: bool = False
    escrow_window_s: int = Field(default=600, ge=60, le=30 * 86_400)
    # The escrow deadlines this node accepts, as buyer (in a quote) and as seller (in a lock):
    # a deadline nearer than the minimum lets a buyer refund itself before a delivery can be
    # paid for; one further than the maximum freezes a buyer's money for as long as a seller asks.
    min_delivery_window_s: int = Field(default=300, ge=60, le=86_400)
    max_lock_s: int = Field(default=86_400, ge=600, le=30 * 86_400)
    receipt_timeout_s: float = Field(default=30.0, ge=1, le=600)
    resume_interval_s: float = Field(default=30.0, gt=0, le=3_600)

    @field_validator("url")
    @classmethod
    def _http(cls, url: str) -> str:
        if url and not url.startswith(("http://", "https://")):
            raise InvalidValue(f"{url!r} is not an http(s) JSON-RPC URL (like http://127.0.0.1:8545)")
        return url

    @model_validator(mode="after")
    def _window_within_bounds(self) -> ChainSection:
        if not self.min_delivery_window_s <= self.escrow_window_s <= self.max_lock_s:
            raise InvalidValue(
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
    def _preset(self) -> ChainSection:
        preset = PRESETS.get(self.preset)
        if preset is None:
            return self
        if not self.url:
            raise InvalidValue(f"[chain] preset = {self.preset!r} needs the url of an RPC of that network")
        if self.token_address.lower() != preset.usdc_address.lower():
            raise InvalidValue(
                f"{self.preset}'s USDC is {preset.usdc_address}, not {self.token_address}: leave token_address unset"
            )
        if self.dev:
            raise InvalidValue(f"{self.preset} is a public network, not a dev chain: set dev = false")
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

    @model_validator(mode="after")
    def _addresses(self) -> ChainSection:
        if self.url:
            for name in ("token_address", "escrow_address"):
                if not _ADDRESS.fullmatch(getattr(self, name)):
                    raise InvalidValue(
                        f"with a chain url, {name} must be the 0x-prefixed contract address "
                        "(`bitterbot-node chain deploy --url URL` deploys ours on a dev chain and prints both)"
                    )
        elif self.dev or self.token_address or self.escrow_address:
            raise InvalidValue(
                "token_address, escrow_address and dev belong to a chain url; the embedded chain has its own"
            )
        return self


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiSection(_Section):
    enabled: bool = True
    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=7420, ge=0, le=65_535)
    allow_remote: bool = False
    dashboard: bool = True
    dashboard_session_hours: float = Field(default=12.0, gt=0, le=720)

    @model_validator(mode="after")
    def _loopback_unless_allowed(self) -> ApiSection:
        if not is_loopback(self.host) and not self.allow_remote:
            raise InvalidValue(
                f"host {self.host!r} is reachable beyond this machine; the API serves loopback only "
                "unless allow_remote = true is set too"
            )
        return self


class DoctorSection(_Section):
    #: Off: `doctor` checks the clock with local sources only (the system's NTP state); a node
    #: contacts an outside host only when the person asked (this, or `doctor --clock-online`).
    clock_online: bool = False
    time_url: str = "https://pypi.org/simple/"

    @field_validator("time_url")
    @classmethod
    def _http(cls, url: str) -> str:
        if url and not url.startswith(("http://", "https://")):
            raise InvalidValue(f"{url!r} is not an http(s) URL")
        return url


class Config(_Section):
    @model_validator(mode="after")
    def _llm_typer_needs_endpoint(self) -> Config:
        if self.memory.typer == "llm" and not (self.llm.url and self.llm.model):
            raise InvalidValue('[memory] typer = "llm" needs [llm] url and model')
        if self.memory.supersession == "llm" and not (self.llm.url and self.llm.model):
            raise InvalidValue('[memory] supersession = "llm" needs [llm] url and model')
        if self.capture.extractor == "llm" and not (self.llm.url and self.llm.model):
            raise InvalidValue('[capture] extractor = "llm" needs [llm] url and model')
        return self

    node: NodeSection = Field(default_factory=NodeSection)
    log: LogSection = Field(default_factory=LogSection)
    identity: IdentitySection = Field(default_factory=IdentitySection)
    trust: TrustSettings = Field(default_factory=TrustSettings)
    wire: WireSettings = Field(default_factory=WireSettings)
    memory: MemorySection = Field(default_factory=MemorySection)
    hormones: HormonesSection = Field(default_factory=HormonesSection)
    consolidation: ConsolidationSection = Field(default_factory=ConsolidationSection)
    dream: DreamSection = Field(default_factory=DreamSection)
    capture: CaptureSection = Field(default_factory=CaptureSection)
    llm: LlmSection = Field(default_factory=LlmSection)
    p2p: P2PSettings = Field(default_factory=P2PSettings)
    marketplace: MarketplaceSection = Field(default_factory=MarketplaceSection)
    chain: ChainSection = Field(default_factory=ChainSection)
    api: ApiSection = Field(default_factory=ApiSection)
    doctor: DoctorSection = Field(default_factory=DoctorSection)
