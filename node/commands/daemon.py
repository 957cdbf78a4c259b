"""The daemon's own commands: its status (identity, parts and what each reports), and a one-time
login URL for the dashboard (``bitterbot-node ui``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Protocol

from ground.authority import Capability
from node.commands.registry import CommandSet, HttpRoute, NoArgs

if TYPE_CHECKING:
    from node.runtime.status import DaemonStatus


class NodeHost(Protocol):
    """What the node's commands need of the daemon (``node.daemon.daemon.Daemon``)."""

    async def status(self) -> DaemonStatus: ...


class DashboardHost(Protocol):
    """What the login command needs of the dashboard (``node.dashboard.web.Dashboard``)."""

    def login_url(self) -> str: ...


NODE = CommandSet("node")
UI = CommandSet("ui")


@NODE.command("status", NoArgs, route=HttpRoute("GET", "/v1/status", "node"), needs=Capability.READ)
async def status(node: NodeHost, request: NoArgs) -> dict[str, Any]:
    """The node at a glance: identity, parts, memory, peers, weather, market."""
    return asdict(await node.status())


@UI.command("ui.login", NoArgs, route=HttpRoute("POST", "/v1/ui/login", "ui"), needs=Capability.OPEN_DASHBOARD)
async def login(dashboard: DashboardHost, request: NoArgs) -> dict[str, str]:
    """A login URL for the dashboard: it works once, within a minute, and sets a session cookie."""
    return {"url": dashboard.login_url()}
