"""The node's configuration: typed sections with their defaults (the embedded config that
`bitterbot-node run` uses with no file) and their checks. ``node.config_loading`` reads them from
one TOML file and the environment.

Every field is documented in ``configs/edge.toml``; a test keeps that file equal to these defaults.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator, model_validator

from crypto.anchors import parse_public_key
from ground.settings import Section
from marketplace.settings import ChainSettings, MarketplaceSettings
from memory.setup.settings import (
    CaptureSettings,
    ConsolidationSettings,
    DreamSettings,
    HormonesSettings,
    LlmSettings,
    MemorySettings,
)
from node.errors import InvalidValue

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


class TrustSection(_Section):
    management_keys: list[str] = Field(default_factory=list)
    # What strangers can make this node remember about trust (p2p.trust.TrustLimits).
    max_attesters: int = Field(default=256, ge=1, le=100_000)
    max_ratings_per_attester: int = Field(default=256, ge=1, le=256)
    max_tracked_peers: int = Field(default=10_000, ge=100, le=1_000_000)
    eigentrust_budget_s: float = Field(default=2.0, gt=0, le=60)
    # What this node must have seen of a peer itself before the peer is trusted (p2p.trust.floors):
    # good evidence on so many distinct days, and so many runs of its released skills that worked
    # or so much paid to it for completed purchases. A score alone is cheap to move.
    trusted_min_days: int = Field(default=3, ge=0, le=3_650)
    trusted_min_executions: int = Field(default=3, ge=0, le=1_000_000)
    trusted_min_paid_micro_usdc: int = Field(default=1_000_000, ge=0, le=10**12)
    # Release content held only for its author's standing once the author becomes trusted. Off by
    # default: held content waits for the person, or for this rule if the person sets it.
    release_held_on_trust: bool = False

    @field_validator("management_keys")
    @classmethod
    def _keys_are_ed25519(cls, keys: list[str]) -> list[str]:
        for key in keys:
            parse_public_key(key)
        return keys


class WireSection(_Section):
    max_envelope_bytes: int = Field(default=65_536, ge=1_024, le=1_048_576)
    max_age_s: int = Field(default=300, ge=1, le=86_400)
    max_ahead_s: int = Field(default=60, ge=0, le=3_600)
    replay_cache_entries: int = Field(default=100_000, ge=1_000, le=10_000_000)


#: A management node's fastest weather renewal: twice the receivers' weather rate (1 a second, p2p.validation).
MIN_WEATHER_RENEW_S = 2.0


class P2PSection(_Section):
    enabled: bool = True
    listen: list[str] = Field(default_factory=lambda: ["/ip4/0.0.0.0/tcp/4001"])
    bootstrap: list[str] = Field(default_factory=list)
    mdns: bool = False
    degree: int = Field(default=6, ge=1, le=50)
    degree_low: int = Field(default=4, ge=1, le=50)
    degree_high: int = Field(default=12, ge=1, le=100)
    penalty_threshold: int = Field(default=100, ge=10, le=100_000)
    ban_minutes: float = Field(default=10.0, gt=0, le=10_080)
    skill_rate_per_s: float = Field(default=5.0, gt=0, le=1_000)
    skill_burst: int = Field(default=20, ge=1, le=10_000)
    strangers_skill_rate_per_s: float = Field(default=20.0, gt=0, le=10_000)
    strangers_skill_burst: int = Field(default=100, ge=1, le=100_000)
    strangers_bounty_rate_per_s: float = Field(default=1.0, gt=0, le=1_000)
    attestation_interval_min: float = Field(default=5.0, gt=0, le=1_440)
    # A management node announces its weather again this often while it lasts (p2p.weather), so that a node
    # that missed the one broadcast or joined after it obeys it from then on; 0: never. Not under
    # MIN_WEATHER_RENEW_S: faster would run into the receivers' weather rate and cost the manager points.
    weather_renew_s: float = Field(default=30.0, ge=0, le=86_400)
    # Before obeying the first weather of an issuer in a run, a node asks the issuer (if connected) and this
    # many other peers for the newest it holds (p2p.weather.confirm), waiting this long for each answer;
    # it answers one asker at most this often (burst 5; past it the stream is reset).
    weather_ask_peers: int = Field(default=3, ge=0, le=32)
    weather_ask_timeout_s: float = Field(default=5.0, gt=0, le=60)
    weather_answers_per_peer_per_s: float = Field(default=1.0, gt=0, le=100)
    delivery_queue: int = Field(default=1024, ge=16, le=1_000_000)
    peer_content_per_author: int = Field(default=200, ge=1, le=1_000_000)
    peer_content_bytes_per_author: int = Field(default=2 * 1024 * 1024, ge=32_768, le=2**40)
    peer_content_total: int = Field(default=20_000, ge=1, le=10_000_000)
    peer_content_bytes_total: int = Field(default=64 * 1024 * 1024, ge=32_768, le=2**40)
    listings_per_seller: int = Field(default=100, ge=1, le=100_000)
    listings_total: int = Field(default=5_000, ge=1, le=1_000_000)
    bounties_per_author: int = Field(default=20, ge=1, le=100_000)
    bounties_total: int = Field(default=2_000, ge=1, le=1_000_000)
    trust_file: str = Field(default="p2p/trust.json", min_length=1)
    # Finding the network from one address (p2p.network.discovery): connections this node keeps up to by asking
    # its neighbours for theirs, how often it asks while below that, and the peer store across restarts.
    target_peers: int = Field(default=8, ge=0, le=1_000)
    discover_s: float = Field(default=15.0, ge=1, le=3_600)
    peer_store_size: int = Field(default=1_000, ge=10, le=100_000)
    # peers one neighbour may have told of and not yet proven by a handshake, dialled but not kept
    peer_store_per_source: int = Field(default=64, ge=1, le=100_000)
    peers_file: str = Field(default="p2p/peers.json", min_length=1)
    # Through NAT (p2p.network.relay): a reachable node may relay for nodes behind NATs, within these bounds.
    relay_service: bool = False
    relay_max_reservations: int = Field(default=32, ge=1, le=10_000)
    relay_max_circuits: int = Field(default=16, ge=1, le=10_000)
    relay_circuit_s: int = Field(default=120, ge=10, le=86_400)
    relay_circuit_bytes: int = Field(default=1 << 20, ge=65_536, le=2**34)
    # "auto": ask the bootstrap peers to dial back (AutoNAT); behind a NAT, reserve a slot on those that relay.
    reachability: Literal["auto", "public", "private"] = "auto"
    # What any remote peer may hold of this node (p2p.network.resources): connections in all and of them
    # inbound, inbound connections per IP (an IPv6 /64 is one), connections per peer, inbound streams in
    # all and per peer, how fast a peer may open them (past it, it is banned), and how long a connection's
    # handshake or a stream's protocol choice may take.
    max_connections: int = Field(default=128, ge=8, le=100_000)
    max_inbound_connections: int = Field(default=96, ge=1, le=100_000)
    connections_per_ip: int = Field(default=8, ge=1, le=100_000)
    connections_per_peer: int = Field(default=2, ge=1, le=64)
    max_streams: int = Field(default=1_024, ge=64, le=1_000_000)
    streams_per_peer: int = Field(default=64, ge=8, le=100_000)
    stream_opens_per_peer_per_s: float = Field(default=8.0, gt=0, le=100_000)
    handshake_s: float = Field(default=10.0, ge=1, le=120)

    @field_validator("listen", "bootstrap")
    @classmethod
    def _multiaddrs(cls, addrs: list[str]) -> list[str]:
        for addr in addrs:
            if not addr.startswith("/"):
                raise InvalidValue(f"{addr!r} is not a multiaddr (like /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW...)")
        return addrs

    @model_validator(mode="after")
    def _degrees_ordered(self) -> P2PSection:
        if not self.degree_low <= self.degree <= self.degree_high:
            raise InvalidValue("need degree_low <= degree <= degree_high")
        if self.max_inbound_connections > self.max_connections:
            raise InvalidValue("need max_inbound_connections <= max_connections")
        if 0 < self.weather_renew_s < MIN_WEATHER_RENEW_S:
            raise InvalidValue(
                f"weather_renew_s is 0 (never) or at least {MIN_WEATHER_RENEW_S} s: nodes take weather from one "
                "key at 1 a second, and a key past that pays penalty points"
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
    trust: TrustSection = Field(default_factory=TrustSection)
    wire: WireSection = Field(default_factory=WireSection)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    hormones: HormonesSettings = Field(default_factory=HormonesSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    dream: DreamSettings = Field(default_factory=DreamSettings)
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    p2p: P2PSection = Field(default_factory=P2PSection)
    marketplace: MarketplaceSettings = Field(default_factory=MarketplaceSettings)
    chain: ChainSettings = Field(default_factory=ChainSettings)
    api: ApiSection = Field(default_factory=ApiSection)
    doctor: DoctorSection = Field(default_factory=DoctorSection)
