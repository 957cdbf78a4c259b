"""The network commands, run on the P2P part: peers, dialing a peer, and the cortisol weather."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from node.commands.registry import CommandSet, HttpRoute, NoArgs, Request
from p2p.trust.peer_listing import PEERS_LISTED


class NetworkHost(Protocol):
    """What the network commands need of the P2P part (``node.parts.p2p.P2PPart``)."""

    async def peer_listing(self, limit: int) -> list[dict[str, Any]]: ...

    async def dial(self, address: str) -> dict[str, Any]: ...

    async def weather_report(self) -> dict[str, Any]: ...

    async def broadcast_weather(self, level: float, duration_s: int, reason: str) -> dict[str, Any]: ...


class PeersArgs(Request):
    limit: int = Field(default=PEERS_LISTED, ge=1, le=PEERS_LISTED, description="At most this many peers.")


class ConnectArgs(Request):
    address: str = Field(min_length=1, max_length=500, description="A multiaddr ending in /p2p/PEER_ID.")


class WeatherArgs(Request):
    level: float = Field(ge=0, le=1, description="Cortisol level; 0 ends a weather.")
    duration_s: int = Field(ge=1, le=7 * 86_400)
    reason: str = Field(min_length=1, max_length=280)


NETWORK = CommandSet("p2p")
commands = NETWORK.command


@commands("peers", PeersArgs, route=HttpRoute("GET", "/v1/peers", "network"))
async def peers(p2p: NetworkHost, request: PeersArgs) -> list[dict[str, Any]]:
    """Peers with trust levels."""
    return await p2p.peer_listing(request.limit)


@commands("p2p.connect", ConnectArgs, route=HttpRoute("POST", "/v1/peers/connect", "network"))
async def connect(p2p: NetworkHost, request: ConnectArgs) -> dict[str, Any]:
    """Dial a peer by multiaddr."""
    return await p2p.dial(request.address)


@commands("weather.show", NoArgs, route=HttpRoute("GET", "/v1/weather", "network"))
async def weather(p2p: NetworkHost, request: NoArgs) -> dict[str, Any]:
    """The weather this node obeys."""
    return await p2p.weather_report()


@commands("weather.broadcast", WeatherArgs, route=HttpRoute("POST", "/v1/weather", "network"))
async def broadcast(p2p: NetworkHost, request: WeatherArgs) -> dict[str, Any]:
    """Broadcast weather (management nodes)."""
    return await p2p.broadcast_weather(request.level, request.duration_s, request.reason)
