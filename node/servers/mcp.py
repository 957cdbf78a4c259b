"""`bitterbot-node mcp`: the node's memory as Model Context Protocol tools, over stdio.

Built on the official SDK's ``MCPServer``. Each tool is a command that declares ``mcp=McpSpec(...)``
(``node.commands.registry``), its parameters built from the command's request model. A tool runs
its command through the running daemon (its local API, as the CLI reaches it) when one
runs on this data dir (so the daemon stays the one writer of its hormones and dreams), otherwise on the
memory store opened directly by this process (SQLite WAL makes that safe). stdout is the
protocol's channel; logs go to stderr.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Annotated, Any, get_type_hints

from pydantic import Field
from pydantic.fields import FieldInfo

from ground.events import get_logger
from node.actor import AGENT
from node.clients.base import ControlError, NodeClient
from node.clients.connect import find_daemon
from node.clients.local import LocalClient
from node.commands.catalog import COMMANDS
from node.commands.catalog import command as command_named
from node.commands.registry import Command, McpSpec, NoArgs
from node.config import Config
from node.error_status import UNEXPECTED, http_status, message_of
from node.paths import NodePaths

log = get_logger("node.mcp")

INSTRUCTIONS = (
    "Long-term memory of this machine's agent (bitterbot-node). At the start of a session call "
    "working_memory_bootstrap and put its text in your context. Search before you ask the person something "
    "they may have told you (memory_search); remember durable facts, preferences and decisions "
    "(memory_remember); jot what matters in this session (working_memory_note); find skills you or the "
    "network have (skills_search)."
)


def build_server(client: NodeClient, commands: Iterable[Command[Any]] = COMMANDS.values()) -> Any:
    """An MCP server with a tool for every command that declares ``mcp``: its parameters are the
    request's fields the tool names (types, bounds and help from the request model)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bitterbot-node", instructions=INSTRUCTIONS)
    commands = list(commands)
    caller = _Caller(client, {**COMMANDS, **{c.name: c for c in commands}})
    for command in commands:
        if command.mcp is not None:
            server.add_tool(_tool(command, command.mcp, caller), name=command.mcp.tool, description=_described(command))
    return server


class _Caller:
    """Runs a command for a tool, its refusals as the tool's errors."""

    def __init__(self, client: NodeClient, commands: Mapping[str, Command[Any]]) -> None:
        self._client = client
        self._commands = commands
        self.through_daemon = client.transport != "local"

    async def __call__(self, command: str, args: dict[str, Any]) -> Any:
        with _as_tool_errors():
            chosen = self._commands[command]
            return await self._client.call(chosen, chosen.from_options(args))


@contextmanager
def _as_tool_errors() -> Iterator[None]:
    """What the agent got wrong, or the daemon refused, as the tool's error message (the SDK shows it
    to the agent; other exceptions it hides behind a generic one)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except ControlError as exc:  # the daemon's refusal, in its words
        raise ToolError(str(exc)) from None
    except Exception as exc:
        if http_status(exc) == UNEXPECTED:
            raise
        raise ToolError(message_of(exc)) from None


def _tool(command: Command[Any], spec: McpSpec, caller: _Caller) -> Callable[..., Awaitable[Any]]:
    """A function whose signature is the tool's parameters (the SDK builds the schema from it)."""
    fields = command.request.model_fields
    named = spec.fields if spec.fields is not None else tuple(f for f in fields if f not in spec.fixed)
    parameters = [_parameter(name, fields[name], spec.defaults) for name in named]
    parameters.sort(key=lambda p: p.default is not inspect.Parameter.empty)  # required ones first

    async def tool(**given: Any) -> Any:
        args = {**given, **spec.fixed}
        if spec.compose is not None:
            with _as_tool_errors():
                request = command.from_options(args)
            return await spec.compose(caller, request)
        answer = await caller(command.name, args)
        return spec.shape(answer) if spec.shape is not None else answer

    # What it returns, as the function that makes the answer says: the SDK gives the agent a
    # structured result (and its schema) from it.
    answers = spec.compose or spec.shape or command.handler
    returns = get_type_hints(answers).get("return", Any)
    tool.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    tool.__name__ = spec.tool
    return tool


def _parameter(name: str, info: FieldInfo, defaults: Mapping[str, Any]) -> inspect.Parameter:
    # The field's type with its bounds and help, as the SDK's schema builder reads a parameter.
    parts: tuple[Any, ...] = (info.annotation, *info.metadata, Field(description=info.description))
    annotation: Any = Annotated[parts]
    if name in defaults:
        default = defaults[name]
    elif info.is_required():
        default = inspect.Parameter.empty
    else:
        default = info.get_default(call_default_factory=True)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _described(command: Command[Any]) -> str:
    assert command.mcp is not None
    return command.mcp.description or command.summary


async def serve(config: Config, paths: NodePaths) -> None:
    """Serve MCP on stdio until the client closes it: through the running daemon, else on the files."""
    client: NodeClient | None = find_daemon(paths, actor=AGENT)
    if client is not None:
        try:
            await client.call(command_named("status"), NoArgs())
            log.info("mcp.via_daemon", transport=client.transport)
        except (ControlError, OSError):
            client = None
    if client is None:
        client = LocalClient(config, paths, actor=AGENT)
        log.info("mcp.direct", db=str(paths.memory_db))
    try:
        await build_server(client).run_stdio_async()
    finally:
        await client.aclose()
