"""A command of the node, defined once: its name, request model, handler, and where it appears
(CLI path, HTTP route, MCP tool).

The HTTP API, the control socket, the OpenAPI document, the MCP server and the CLI all reach
a command through its ``Command``: the servers dispatch by name, the clients send its request,
the CLI's options and the MCP tool's parameters are built from the request model's fields (types,
bounds and help written once, there), and a command marked ``local`` also runs in-process on the
node's files when no daemon runs.
A handler takes the host object of the part named by its ``CommandSet`` (the running part in
the daemon, a file-backed one in the local client) and the validated request.

Modules that define commands import nothing heavy at their top: describing a command (the
CLI's options, the OpenAPI document) must not open the store or load numpy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from ground.authority import Capability, NotAllowed, require
from ground.errors import WiringError
from ground.events import get_logger
from node.actor import current_actor, current_speaker
from node.commands.texts.cli_form import CliSpec
from node.commands.texts.view import Caller

log = get_logger("node.commands")
R = TypeVar("R", bound=BaseModel)
Handler = Callable[[Any, Any], Awaitable[Any]]


class Request(BaseModel):
    """A command's arguments: unknown fields are refused, each field says what it takes."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(Request):
    """A command that takes no arguments."""


@dataclass(frozen=True, slots=True)
class HttpRoute:
    method: Literal["GET", "POST", "DELETE"]
    path: str  # ``{name}`` segments are fields of the request model
    tag: str

    @property
    def path_fields(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{"))


@dataclass(frozen=True, slots=True)
class McpSpec:
    """How a command appears to an agent as an MCP tool (``node.servers.mcp``): the tool's name, the
    request fields the agent sets (all when ``None``; the rest keep their defaults), fields set for
    the agent and never by it (``fixed``), what the agent must know beyond the summary, and what it
    gets back (``shape``, the answer by default). A tool made of several commands says how in
    ``compose``, which receives a caller and the validated request."""

    tool: str
    fields: tuple[str, ...] | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)  # an agent's, where they differ from the API's
    description: str | None = None
    shape: Callable[[Any], Any] | None = None
    compose: Callable[[Caller, Any], Awaitable[Any]] | None = None


@dataclass(frozen=True, slots=True)
class Command(Generic[R]):
    name: str
    part: str  # the part whose host runs it: node, memory, p2p, market
    request: type[R]
    handler: Handler
    summary: str
    route: HttpRoute | None = None
    local: bool = False  # may run in-process on the node's files when no daemon runs
    timeout_s: float = 30.0
    cli: CliSpec | None = None
    #: What the caller must be allowed to do (``ground.authority``): asked before the handler runs.
    needs: Capability = Capability.READ
    mcp: McpSpec | None = None

    @property
    def person_only(self) -> bool:
        """Whether the agent is refused it (the authority table gives the agent less than ``needs``)."""
        from ground.authority import Speaker, may

        return not may(Speaker.AGENT, self.needs)

    def parse(self, args: Mapping[str, Any]) -> R:
        """The request from JSON-shaped arguments; pydantic's ValidationError names a bad field (400)."""
        return self.request.model_validate(dict(args))

    def from_options(self, options: Mapping[str, Any]) -> R:
        """The request from a caller's options (CLI flags, MCP tool arguments): an option left unset
        (None) takes the request's default."""
        return self.parse({k: v for k, v in options.items() if v is not None})

    async def run(self, host: Any, args: Mapping[str, Any] | BaseModel) -> Any:
        try:
            require(current_speaker(), self.needs, self.name)
            request = args if isinstance(args, self.request) else self.parse(_as_mapping(args))
            return await self.handler(host, request)
        except NotAllowed as refused:
            # The audit line, for the command's own need and for what its handler asked of the table
            # about the words it touches: who asked for what, never the arguments.
            log.warning("authority.refused", command=self.name, actor=current_actor(), needs=refused.capability.name)
            raise


def _as_mapping(args: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    if isinstance(args, BaseModel):
        return args.model_dump(mode="json", exclude_none=True)
    return args


class CommandSet:
    """The commands one part owns, declared next to their handlers with ``@commands.command(...)``."""

    def __init__(self, part: str) -> None:
        self.part = part
        self.commands: list[Command[Any]] = []

    def command(
        self,
        name: str,
        request: type[R],
        *,
        route: HttpRoute | None = None,
        local: bool = False,
        timeout_s: float = 30.0,
        cli: CliSpec | None = None,
        summary: str | None = None,
        needs: Capability,
        mcp: McpSpec | None = None,
    ) -> Callable[[Callable[[Any, R], Awaitable[Any]]], Command[R]]:
        """Register the decorated handler; its docstring's first paragraph is the summary unless given."""

        def register(handler: Callable[[Any, R], Awaitable[Any]]) -> Command[R]:
            doc = (handler.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
            command = Command(
                name,
                self.part,
                request,
                handler,
                summary or doc or name,
                route,
                local,
                timeout_s,
                cli,
                needs,
                mcp,
            )
            self.commands.append(command)
            return command

        return register


def index(commands: Iterable[Command[Any]]) -> dict[str, Command[Any]]:
    """Commands by name; two with one name, or two on one route, is a programming error."""
    by_name: dict[str, Command[Any]] = {}
    routes: set[tuple[str, str]] = set()
    places: set[tuple[str, ...]] = set()
    for command in commands:
        if command.name in by_name:
            raise WiringError(f"two commands are named {command.name!r}")
        _check_places(command, places)
        if command.route is not None:
            key = (command.route.method, command.route.path)
            if key in routes:
                raise WiringError(f"two commands serve {key[0]} {key[1]}")
            routes.add(key)
            missing = [f for f in command.route.path_fields if f not in command.request.model_fields]
            if missing:
                raise WiringError(f"{command.name}: path fields {missing} are not fields of its request")
        by_name[command.name] = command
    return by_name


def _check_places(command: Command[Any], places: set[tuple[str, ...]]) -> None:
    """One command per CLI path and per MCP tool; what they name are fields of the request; a
    person-only command never reaches the agent."""
    fields = command.request.model_fields
    if command.cli is not None:
        if command.cli.path in places:
            raise WiringError(f"two commands are `{' '.join(command.cli.path)}`")
        places.add(command.cli.path)
        named = [*command.cli.arguments, *command.cli.options, *command.cli.defaults, *command.cli.convert]
        if unknown := [f for f in named if f not in fields]:
            raise WiringError(f"{command.name}: the CLI names {unknown}, not fields of its request")
    if command.mcp is not None:
        if command.person_only:
            raise WiringError(f"{command.name}: only the person runs it, so it is no MCP tool")
        if ("mcp", command.mcp.tool) in places:
            raise WiringError(f"two commands are the MCP tool {command.mcp.tool!r}")
        places.add(("mcp", command.mcp.tool))
        named = [*(command.mcp.fields or ()), *command.mcp.fixed, *command.mcp.defaults]
        if unknown := [f for f in named if f not in fields]:
            raise WiringError(f"{command.name}: the MCP tool names {unknown}, not fields of its request")
