"""The dashboard's command: a one-time login URL for a browser (``bitterbot-node ui``)."""

from __future__ import annotations

from typing import Protocol

from node.commands.registry import CommandSet, HttpRoute, NoArgs


class DashboardHost(Protocol):
    """What the command needs of the dashboard (``node.dashboard.web.Dashboard``)."""

    def login_url(self) -> str: ...


UI = CommandSet("ui")


@UI.command("ui.login", NoArgs, route=HttpRoute("POST", "/v1/ui/login", "ui"))
async def login(dashboard: DashboardHost, request: NoArgs) -> dict[str, str]:
    """A login URL for the dashboard: it works once, within a minute, and sets a session cookie."""
    return {"url": dashboard.login_url()}
