"""Every command of the node, by name: what the servers serve, the clients send and the docs list,
and running one by name on the part that owns it (``dispatch``: the HTTP API, the control socket
and the dashboard do that with a request once they have its name and JSON arguments).

A new command goes into its part's command module; a new command module is added here once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from node.commands import daemon, devices, market, memory, memory_history, network, skills, working_memory
from node.commands.registry import Command, index
from node.errors import PartOff, UnknownCommand

Hosts = Callable[[], Mapping[str, Any]]

COMMANDS: dict[str, Command[Any]] = index(
    [
        *daemon.NODE.commands,
        *memory.MEMORY.commands,
        *memory_history.HISTORY.commands,
        *working_memory.DYNAMICS.commands,
        *skills.LEDGER.commands,
        *skills.SKILLS.commands,
        *network.NETWORK.commands,
        *devices.DEVICES.commands,
        *market.MARKET.commands,
        *daemon.UI.commands,
    ]
)


def command(name: str) -> Command[Any]:
    """The command called ``name``; a name no module defines is a programming error."""
    return COMMANDS[name]


def table() -> str:
    """Every command and where it appears, as the README shows it (a test keeps the two the same)."""
    rows = ["| command | CLI | API | MCP tool | needs (`ground/authority.py`) |", "| --- | --- | --- | --- | --- |"]
    for found in COMMANDS.values():
        cli = f"`{' '.join(found.cli.path)}`" if found.cli else "-"
        api = f"`{found.route.method} {found.route.path}`" if found.route else "-"
        mcp = f"`{found.mcp.tool}`" if found.mcp else ("never: the person's" if found.person_only else "-")
        rows.append(f"| `{found.name}` | {cli} | {api} | {mcp} | {found.needs.value} |")
    return "\n".join(rows)


async def dispatch(hosts: Hosts, name: str, args: Mapping[str, Any]) -> Any:
    """Validate ``args`` against the command's request model and run it on its part's host.
    A part this node does not run raises ``PartOff`` (503, ``unavailable``)."""
    found = COMMANDS.get(name)
    if found is None:
        raise UnknownCommand(f"unknown command {name!r}")
    host = hosts().get(found.part)
    if host is None:
        raise PartOff(name)
    return await found.run(host, args)
