"""MCP tools built from a command's declaration: the tool's parameters are the request's fields
(types, bounds, help), fixed fields are not the agent's to set, and the tool runs the command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from ground.authority import Capability
from node.actor import AGENT
from node.clients.local import LocalClient
from node.commands.registry import CommandSet, McpSpec, Request
from node.config import Config
from node.paths import NodePaths
from node.servers.mcp import build_server


class Echo(Request):
    text: str = Field(min_length=1, max_length=20, description="What to echo.")
    times: int = Field(default=1, ge=1, le=3, description="How often.")
    origin: str = "api"


ECHO = CommandSet("memory")


@ECHO.command(
    "echo.run",
    Echo,
    local=True,
    mcp=McpSpec("echo", fixed={"origin": "agent"}, defaults={"times": 2}, shape=lambda doc: doc["said"]),
    needs=Capability.WRITE,
)
async def echo(host: Any, request: Echo) -> dict[str, Any]:
    """Say it again."""
    return {"said": " ".join([request.text] * request.times) + f" ({request.origin})"}


@pytest.fixture
async def server(tmp_path: Path) -> Any:
    config = Config()
    client = LocalClient(config, NodePaths.of(tmp_path / "data", config), actor=AGENT)
    try:
        yield build_server(client, ECHO.commands)
    finally:
        await client.aclose()


async def test_the_tool_is_the_declaration(server: Any) -> None:
    (tool,) = [t for t in await server.list_tools() if t.name == "echo"]
    fields = tool.input_schema["properties"]
    assert set(fields) == {"text", "times"} and tool.input_schema["required"] == ["text"]  # origin is fixed
    assert fields["text"]["description"] == "What to echo." and fields["text"]["maxLength"] == 20
    assert fields["times"]["maximum"] == 3 and fields["times"]["default"] == 2  # the agent's default
    assert tool.description == "Say it again."


def _said(result: Any) -> str:
    (content,) = result.content
    return str(content.text)


async def test_the_tool_runs_the_command_with_fixed_fields_and_refuses_bad_ones(server: Any) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    assert _said(await server.call_tool("echo", {"text": "hi"})) == "hi hi (agent)"
    with pytest.raises(ToolError, match="less than or equal to 3"):
        await server.call_tool("echo", {"text": "hi", "times": 9})
    # A fixed field is not the agent's to say: what it sends there is dropped.
    assert _said(await server.call_tool("echo", {"text": "hi", "origin": "user_input"})) == "hi hi (agent)"
