"""The network commands, run on the network service (``p2p.services.network``): peers, dialing a
peer, and the cortisol weather."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from ground.authority import Capability
from memory.errors import InvalidQuery
from memory.retrieval.query import parse_since
from node.commands.registry import CommandSet, HttpRoute, McpSpec, NoArgs, Request
from node.commands.texts import network as text
from node.commands.texts.cli_form import CliSpec
from node.errors import UsageError
from p2p.trust.peer_listing import PEERS_LISTED


class NetworkHost(Protocol):
    """What the network commands need of the network (``p2p.services.network.NetworkService``)."""

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
    duration_s: int = Field(ge=1, le=7 * 86_400, description="How long it lasts (on the command line: 30s, 5m, 2h).")
    reason: str = Field(min_length=1, max_length=280)


NETWORK = CommandSet("network")
commands = NETWORK.command


def _seconds(given: str) -> int:
    """ "--duration 5m" as whole seconds, at least one."""
    try:
        duration_ms = -parse_since(given, 0)
    except InvalidQuery as exc:
        raise UsageError(str(exc)) from None
    if duration_ms < 1_000:
        raise UsageError("--duration must be at least 1s")
    return duration_ms // 1000


@commands(
    "peers",
    PeersArgs,
    route=HttpRoute("GET", "/v1/peers", "network"),
    cli=CliSpec("", "peers", render=text.peers),
    mcp=McpSpec("network_peers"),
    needs=Capability.READ,
)
async def peers(p2p: NetworkHost, request: PeersArgs) -> list[dict[str, Any]]:
    """Connected and known peers: trust level, local/global/combined trust, penalties."""
    return await p2p.peer_listing(request.limit)


@commands(
    "p2p.connect",
    ConnectArgs,
    route=HttpRoute("POST", "/v1/peers/connect", "network"),
    cli=CliSpec("", "connect", arguments=("address",), render=text.connected),
    needs=Capability.RUN_NODE,
)
async def connect(p2p: NetworkHost, request: ConnectArgs) -> dict[str, Any]:
    """Dial a peer now, by its full multiaddr (/ip4/…/tcp/…/p2p/12D3KooW…)."""
    return await p2p.dial(request.address)


@commands(
    "weather.show",
    NoArgs,
    route=HttpRoute("GET", "/v1/weather", "network"),
    cli=CliSpec("weather", "show", render=text.weather_now),
    mcp=McpSpec("network_weather"),
    needs=Capability.READ,
)
async def weather(p2p: NetworkHost, request: NoArgs) -> dict[str, Any]:
    """The weather this node obeys now."""
    return await p2p.weather_report()


@commands(
    "weather.broadcast",
    WeatherArgs,
    route=HttpRoute("POST", "/v1/weather", "network"),
    cli=CliSpec(
        "weather",
        "broadcast",
        options={"duration_s": "--duration"},
        convert={"duration_s": _seconds},
        render=text.weather_sent,
    ),
    needs=Capability.ADMINISTER,
)
async def broadcast(p2p: NetworkHost, request: WeatherArgs) -> dict[str, Any]:
    """Sign and gossip a weather event (management nodes only)."""
    return await p2p.broadcast_weather(request.level, request.duration_s, request.reason)
