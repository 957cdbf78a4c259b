"""Command-line commands built from a command's request model: every field becomes an argument or
an option of the right kind, and the values click parses validate as the request."""

from __future__ import annotations

from typing import Any

import click
import pytest
from pydantic import Field

from memory.model import SemanticType
from node.cli.generated import add_generated, build
from node.commands.registry import CliSpec, CommandSet, Request


class Sample(Request):
    text: str = Field(min_length=1)
    types: list[SemanticType] = Field(default_factory=list, description="Only these.")
    limit: int = Field(default=10, ge=1)
    ratio: float | None = None
    include_held: bool = False


SAMPLES = CommandSet("memory")


@SAMPLES.command(
    "sample.run", Sample, cli=CliSpec("memory", "sample", arguments=("text",), options={"types": "--type"})
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
    with pytest.raises(ValueError, match="no command group 'memory'"):
        add_generated(root, SAMPLES.commands)
