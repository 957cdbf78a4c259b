"""The one interface every way of reaching a node implements, and what its calls may raise.

Three implementations: ``HttpClient`` (the daemon's local API), ``SocketClient`` (its control
socket, for a daemon run with the API off) and ``LocalClient`` (no daemon: the command runs in
this process on the node's files). A caller picks none of them by hand: ``node.clients.connect``
does, the way httpx hides its transports behind one client.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from node.commands.registry import Command
from node.errors import EXIT_FAILURE, EXIT_USAGE, NodeError


class ControlError(NodeError):
    """The daemon refused a command (``status``: the HTTP status its answer carried,
    ``node.error_status``), or could not be reached."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status
        # a refusal the person can act on exits 2; the daemon's own failure (500) exits 1
        self.exit_code = EXIT_FAILURE if status == 500 else EXIT_USAGE


class DaemonNotRunning(ControlError):
    pass


class CommandUnavailable(ControlError):
    """The daemon runs without the part that serves this command (e.g. P2P disabled)."""


class NodeClient(Protocol):
    @property
    def transport(self) -> str:
        """ "api", "control socket" or "local": what a person is told when it matters."""
        ...

    async def call(self, command: Command[Any], request: BaseModel) -> Any:
        """Run ``command`` with ``request``; the answer is JSON-shaped, the same from every client."""
        ...

    async def aclose(self) -> None: ...


def wire(request: BaseModel) -> dict[str, Any]:
    """A request as JSON arguments (what the API and the control socket take)."""
    return request.model_dump(mode="json", exclude_none=True)
