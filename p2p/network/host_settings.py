"""The host's settings: where it listens, whom it dials first, its gossip mesh degrees and the
accepted messages it holds per lane, with its connection bounds and relaying (``p2p.host`` runs
them)."""

from __future__ import annotations

from typing import Self

from pydantic import Field, field_validator, model_validator

from ground.settings import SettingError
from p2p.network.bounds import ConnectionBounds
from p2p.network.relay import RelaySettings

#: One loopback address on a port the system picks: what a host in a test, a benchmark or a tool listens on.
LOOPBACK = ["/ip4/127.0.0.1/tcp/0"]


class HostSettings(ConnectionBounds, RelaySettings):
    """The host's settings: where it listens, whom it dials first, its gossip mesh degrees and the
    accepted messages it holds per lane (``p2p.deliveries``), with its connection bounds and relaying."""

    listen: list[str] = Field(default_factory=lambda: ["/ip4/0.0.0.0/tcp/4001"])
    bootstrap: list[str] = Field(default_factory=list)
    mdns: bool = False
    degree: int = Field(default=6, ge=1, le=50)
    degree_low: int = Field(default=4, ge=1, le=50)
    degree_high: int = Field(default=12, ge=1, le=100)
    delivery_queue: int = Field(default=1024, ge=16, le=1_000_000)

    @field_validator("listen", "bootstrap")
    @classmethod
    def _multiaddrs(cls, addrs: list[str]) -> list[str]:
        for addr in addrs:
            if not addr.startswith("/"):
                raise SettingError(f"{addr!r} is not a multiaddr (like /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW...)")
        return addrs

    @model_validator(mode="after")
    def _degrees_ordered(self) -> Self:
        if not self.degree_low <= self.degree <= self.degree_high:
            raise SettingError("need degree_low <= degree <= degree_high")
        return self
