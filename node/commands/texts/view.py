"""What a rendering (``CliSpec.render``) and a composed MCP tool (``McpSpec.compose``) are given
besides the answer: kept here, below both the registry and the renderings, so neither imports the other."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from node.config_loading import LoadedConfig
    from node.paths import NodePaths


@dataclass(frozen=True, slots=True)
class CliView:
    """What a command's rendering may look at besides its answer: the request it ran, and the node's
    config and paths (resolved only when asked: most renderings need neither)."""

    request: Any
    locate: Callable[[], tuple[LoadedConfig, NodePaths]]
    flags: Mapping[str, bool] = field(default_factory=dict)  # the CLI's own flags (``CliSpec.flags``)


class Caller(Protocol):
    """How a composed MCP tool runs the commands it is made of (``McpSpec.compose``)."""

    through_daemon: bool

    async def __call__(self, command: str, args: dict[str, Any]) -> Any: ...
