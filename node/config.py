"""The node's configuration: typed sections with their defaults (the embedded config that
`bitterbot-node run` uses with no file) and their checks. ``node.config_loading`` reads them from
one TOML file and the environment.

Every field is documented in ``configs/edge.toml``; a test keeps that file equal to these defaults.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from pydantic import Field, field_validator, model_validator

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
    memory: MemorySettings = Field(default_factory=MemorySettings)
    hormones: HormonesSettings = Field(default_factory=HormonesSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    dream: DreamSettings = Field(default_factory=DreamSettings)
    capture: CaptureSettings = Field(default_factory=CaptureSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    p2p: P2PSettings = Field(default_factory=P2PSettings)
    marketplace: MarketplaceSettings = Field(default_factory=MarketplaceSettings)
    chain: ChainSettings = Field(default_factory=ChainSettings)
    api: ApiSection = Field(default_factory=ApiSection)
    doctor: DoctorSection = Field(default_factory=DoctorSection)
