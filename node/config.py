"""The node's configuration: typed sections with their defaults (the embedded config that
`bitterbot-node run` uses with no file) and their checks. ``node.config_loading`` reads them from
one TOML file and the environment.

Each package owns its tables (``ground.settings``); this module composes them with the node's own.
A field's words are the docstring under it; ``docs/generate.py`` writes ``configs/edge.toml`` from them.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ground.settings import Section
from marketplace.settings import ChainSettings, MarketplaceSettings
from memory.devices.settings import DevicesSettings
from memory.setup.settings import (
    CaptureSettings,
    ConsolidationSettings,
    DreamSettings,
    HormonesSettings,
    LlmSettings,
    MemorySettings,
)
from node.errors import InvalidValue
from p2p.settings import P2PSettings, TrustSettings, WireSettings

_Section = Section


class NodeSection(_Section):
    name: str = Field(default="bitterbot-node", min_length=1, max_length=64)
    """Human-readable name, shown by `status` and in logs. 1-64 characters."""
    role: Literal["edge", "management"] = "edge"
    """"edge" (an agent's machine) or "management" (a trust anchor that signs weather)."""
    data_dir: str = ""
    """Where the node keeps its files. Empty: the platform's user data dir
    (~/.local/share/bitterbot-node on Linux). --data-dir and $BITTERBOT_DATA_DIR win over this.
    """
    status_interval_s: float = Field(default=2.0, gt=0, le=60)
    """Seconds between rewrites of status.json (read by `bitterbot-node status`). (0, 60]."""
    shutdown_timeout_s: float = Field(default=4.0, gt=0, le=60)
    """Seconds the daemon gives its parts to stop after SIGINT/SIGTERM before it exits 1. (0, 60]."""


LogLevel = Literal["debug", "info", "warning", "error"]


class LogSection(_Section):
    level: LogLevel = "info"
    """"debug", "info", "warning" or "error". Memory text is logged at debug level only."""
    format: Literal["text", "json"] = "text"
    """"text" for people, "json" for log collectors (one object per line)."""
    parts: dict[str, LogLevel] = Field(default_factory=dict)
    """A level per part, over `level`: logger names are node.memory, node.p2p, node.market,
    node.api, node.mcp, node.control, node.daemon (or a prefix such as "node", "memory",
    "p2p"), e.g. parts = { "node.p2p" = "debug", "node.memory" = "warning" }.
    """


class IdentitySection(_Section):
    key_file: str = Field(default="identity.key", min_length=1)
    """The node's Ed25519 key file, relative to the data dir unless absolute.
    Created by `bitterbot-node init` (or the first `run`); must be mode 0600.
    An encrypted key's passphrase comes from --passphrase-file or $BITTERBOT_KEY_PASSPHRASE.
    """


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiSection(_Section):
    enabled: bool = True
    """The local HTTP API for agents (JSON, OpenAPI document at /v1/openapi.json, Prometheus
    metrics at /metrics). Every call but /v1/health and /v1/openapi.json needs the bearer
    token in <data dir>/api.token (mode 0600, created by `init` or the first `run`).
    """
    host: str = Field(default="127.0.0.1", min_length=1)
    """Loopback only: any other host is refused unless allow_remote = true is set as well."""
    port: int = Field(default=7420, ge=0, le=65_535)
    """0 picks a free port (`status` shows the URL)."""
    allow_remote: bool = False
    """Serve on a host other than loopback (with host): only behind a network you trust, since the
    token is the only guard."""
    dashboard: bool = True
    """The dashboard for a person, at / on the same address (`bitterbot-node ui` opens it through a
    one-time login URL that sets a session cookie; nothing is served without one).
    """
    dashboard_session_hours: float = Field(default=12.0, gt=0, le=720)
    """How long a dashboard session lasts before `bitterbot-node ui` is needed again."""

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
    """`bitterbot-node doctor` asks the system whether its clock is synchronised (timedatectl). With
    clock_online = true (or `doctor --clock-online`) it also compares the clock with time_url's
    HTTP Date header (peers refuse messages more than a minute from their own clock); off by
    default, so doctor contacts no outside host unless asked. Empty time_url: not compared.
    """
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
    memory: MemorySettings = Field(default_factory=MemorySettings)
    hormones: HormonesSettings = Field(default_factory=HormonesSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    dream: DreamSettings = Field(default_factory=DreamSettings)
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    devices: DevicesSettings = Field(default_factory=DevicesSettings)
    p2p: P2PSettings = Field(default_factory=P2PSettings)
    marketplace: MarketplaceSettings = Field(default_factory=MarketplaceSettings)
    chain: ChainSettings = Field(default_factory=ChainSettings)
    api: ApiSection = Field(default_factory=ApiSection)
    doctor: DoctorSection = Field(default_factory=DoctorSection)
