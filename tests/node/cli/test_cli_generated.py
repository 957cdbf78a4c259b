"""Command-line commands built from a command's request model: every field becomes an argument or
an option of the right kind, and the values click parses validate as the request."""

from __future__ import annotations

from typing import Any

import click
import pytest
from pydantic import Field

from ground.authority import Capability
from ground.errors import WiringError
from memory.model import SemanticType
from node.cli.generated import add_generated, build
from node.commands.registry import CommandSet, Request
from node.commands.texts.cli_form import CliSpec


class Sample(Request):
    text: str = Field(min_length=1)
    types: list[SemanticType] = Field(default_factory=list, description="Only these.")
    limit: int = Field(default=10, ge=1)
    ratio: float | None = None
    include_held: bool = False


SAMPLES = CommandSet("memory")


@SAMPLES.command(
    "sample.run",
    Sample,
    cli=CliSpec("memory", "sample", arguments=("text",), options={"types": "--type"}),
    needs=Capability.READ,
)
async def sample(host: Any, request: Sample) -> dict[str, Any]:
    """A sample command."""
    return request.model_dump(mode="json")


def parsed(*argv: str) -> dict[str, Any]:
    command = build(SAMPLES.commands[0])
    with command.make_context("sample", list(argv)) as ctx:
        return dict(ctx.params)


def test_fields_become_an_argument_and_typed_options_and_parse_into_a_valid_request() -> None:
    params = parsed("hello", "--type", "fact", "--type", "goal", "--limit", "3", "--include-held", "--json")
    assert params["text"] == "hello" and params["types"] == ("fact", "goal") and params["limit"] == 3
    assert params["include_held"] is True and params["as_json"] is True and params["ratio"] is None
    request = Sample.model_validate({k: list(v) if isinstance(v, tuple) else v for k, v in params.items()
                                     if k in Sample.model_fields and v is not None})  # fmt: skip
    assert request.types == [SemanticType.FACT, SemanticType.GOAL]


def test_defaults_come_from_the_model_and_bad_values_are_refused_by_click() -> None:
    params = parsed("hello")
    assert params["limit"] == 10 and params["types"] == () and params["include_held"] is False
    with pytest.raises(click.BadParameter):
        parsed("hello", "--type", "not-a-type")
    with pytest.raises(click.BadParameter):
        parsed("hello", "--limit", "many")


def test_location_options_and_help_are_those_of_every_command() -> None:
    command = build(SAMPLES.commands[0])
    names = {p.name for p in command.params}
    assert {"config_path", "data_dir", "as_json", "text", "types", "limit", "ratio", "include_held"} == names
    assert command.help == "A sample command."


def test_a_command_naming_a_group_that_does_not_exist_is_a_programming_error() -> None:
    root = click.Group("root")
    with pytest.raises(WiringError, match="no command group 'memory'"):
        add_generated(root, SAMPLES.commands)


class Tuned(Request):
    tags: list[str] = Field(default_factory=list, description="Tags.")
    seconds: int = Field(default=60, ge=1, le=3600, description="How long.")
    ratio: float = Field(default=0.5, gt=0, le=1)
    reason: str = "said by the API"


def _tuned(**spec: Any) -> click.Command:
    tuned = CommandSet("memory")

    @tuned.command("tuned.run", Tuned, needs=Capability.READ, cli=CliSpec("memory", "tuned", **spec))
    async def run(host: Any, request: Tuned) -> dict[str, Any]:
        """Tuned."""
        return {}

    return build(tuned.commands[0])


def _params(command: click.Command, *argv: str) -> dict[str, Any]:
    with command.make_context("tuned", list(argv)) as ctx:
        return dict(ctx.params)


def test_bounds_of_the_model_are_the_options_ranges() -> None:
    command = _tuned()
    with pytest.raises(click.BadParameter, match="1<=x<=3600"):
        _params(command, "--seconds", "0")
    with pytest.raises(click.BadParameter, match="0<x<=1"):
        _params(command, "--ratio", "0")
    assert _params(command, "--ratio", "1")["ratio"] == 1.0


def test_a_persons_defaults_conversions_and_flags_are_declared_with_the_command() -> None:
    command = _tuned(
        defaults={"reason": "said by the person"},
        convert={"tags": lambda text: text.split(",")},
        options={"seconds": "--for"},
        flags={"explain": "Every factor."},
    )
    params = _params(command, "--tags", "a,b", "--for", "5", "--explain")
    assert params["reason"] == "said by the person" and params["tags"] == "a,b" and params["seconds"] == 5
    assert params["explain"] is True
    assert _params(command)["tags"] is None  # left out: the request's own default, not the text "[]"


def test_a_cli_path_or_an_mcp_tool_names_one_command_and_only_fields_of_its_request() -> None:
    from node.commands.registry import McpSpec, index

    twice = CommandSet("memory")
    for name in ("one", "two"):
        twice.command(name, Tuned, needs=Capability.READ, cli=CliSpec("memory", "same"))(sample.handler)
    with pytest.raises(WiringError, match="two commands are `memory same`"):
        index(twice.commands)
    wrong = CommandSet("memory")
    wrong.command("w", Tuned, needs=Capability.READ, cli=CliSpec("memory", "w", arguments=("nope",)))(sample.handler)
    with pytest.raises(WiringError, match=r"the CLI names \['nope'\]"):
        index(wrong.commands)
    agents = CommandSet("memory")
    agents.command("p", Tuned, needs=Capability.DIRECT, mcp=McpSpec("p"))(sample.handler)
    with pytest.raises(WiringError, match="only the person runs it, so it is no MCP tool"):
        index(agents.commands)
