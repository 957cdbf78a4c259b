"""The node's own command: its status (identity, parts and what each reports)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Protocol

from node.commands.registry import CommandSet, HttpRoute, NoArgs

if TYPE_CHECKING:
    from node.runtime.status import DaemonStatus


class NodeHost(Protocol):
    """What the node's commands need of the daemon (``node.runtime.daemon.Daemon``)."""

    def status(self) -> DaemonStatus: ...


NODE = CommandSet("node")


@NODE.command("status", NoArgs, route=HttpRoute("GET", "/v1/status", "node"))
async def status(node: NodeHost, request: NoArgs) -> dict[str, Any]:
    """The node at a glance: identity, parts, memory, peers, weather, market."""
    return asdict(node.status())
