"""Running a command by name on the part that owns it: what both the HTTP API and the control
socket do with a request once they have its name and JSON arguments."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from node.commands.catalog import COMMANDS
from node.errors import PartOff, UnknownCommand

Hosts = Callable[[], Mapping[str, Any]]


async def dispatch(hosts: Hosts, name: str, args: Mapping[str, Any]) -> Any:
    """Validate ``args`` against the command's request model and run it on its part's host.
    A part this node does not run raises ``PartOff`` (503, ``unavailable``)."""
    command = COMMANDS.get(name)
    if command is None:
        raise UnknownCommand(f"unknown command {name!r}")
    host = hosts().get(command.part)
    if host is None:
        raise PartOff(name)
    return await command.run(host, args)
