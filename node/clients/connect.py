"""Choosing how to reach a node: its running daemon (API, else control socket), else this process.

A command goes to the daemon when one runs, so that one process owns the working-memory files,
the consolidation and dream locks and the metrics. With no daemon, or one that runs without the
command's part (P2P disabled), a ``local`` command runs here on the files; any other is refused."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from node.actor import AGENT, CLI
from node.clients.base import CommandUnavailable, NodeClient
from node.clients.http import HttpClient
from node.clients.local import LocalClient
from node.clients.socket import SocketClient
from node.commands.registry import Command
from node.config import Config
from node.paths import NodePaths
from node.runtime.status import probe_daemon


def find_daemon(paths: NodePaths, *, actor: str = CLI) -> NodeClient | None:
    """A client of the running daemon on this data dir, or None when there is none."""
    probe = probe_daemon(paths.data_dir)
    if not probe.running:
        return None
    url = probe.status.details.get("api", {}).get("url") if probe.status is not None else None
    if url:
        # The daemon knows who asks from the token alone: the person's CLI sends the owner's token,
        # the agent (MCP) the API token.
        token_file = paths.api_token_file if actor == AGENT else paths.owner_token_file
        return HttpClient(url, token_file, actor)
    return SocketClient(paths.control_socket, actor)


async def call_node(
    config: Config, paths: NodePaths, command: Command[Any], request: BaseModel, *, actor: str = CLI
) -> Any:
    """``command`` in the running daemon, or here on the files when it may run here (the local client
    refuses, naming the daemon, one that may not)."""
    daemon = find_daemon(paths, actor=actor)
    if daemon is not None:
        try:
            return await daemon.call(command, request)
        except CommandUnavailable:
            if not command.local:
                raise
    local = LocalClient(config, paths, actor=actor)
    try:
        return await local.call(command, request)
    finally:
        await local.aclose()
