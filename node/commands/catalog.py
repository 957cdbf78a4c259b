"""Every command of the node, by name: what the servers serve, the clients send and the docs list.

A new command goes into its part's command module; a new command module is added here once."""

from __future__ import annotations

from typing import Any

from node.commands import market, memory, network, skills, status, ui
from node.commands.registry import Command, index

COMMANDS: dict[str, Command[Any]] = index(
    [
        *status.NODE.commands,
        *memory.MEMORY.commands,
        *skills.LEDGER.commands,
        *skills.SKILLS.commands,
        *network.NETWORK.commands,
        *market.MARKET.commands,
        *ui.UI.commands,
    ]
)


def command(name: str) -> Command[Any]:
    """The command called ``name``; a name no module defines is a programming error."""
    return COMMANDS[name]
