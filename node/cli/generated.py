"""Command-line commands built from their ``Command``: a command that declares ``cli=CliSpec(...)``
appears under its group with an argument or option per request field (its type, bounds, default
and help from the request model), ``--json``, ``--config`` and ``--data-dir``, and runs like every
other (in the daemon when one runs, else here if ``local``).

Hand-written CLI commands remain only for what is not a command: starting the daemon, bulk work on
the files (import, export, backup), the config and the doctor."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import click

from ground.errors import WiringError
from node.cli.common import handles_errors, location_options, resolve
from node.cli.progress import progress_bar_on_first_step
from node.cli.transport import run_command
from node.commands.catalog import COMMANDS
from node.commands.registry import Command
from node.commands.texts.cli_form import CliSpec, answer_text, parameters, request_values
from node.commands.texts.view import CliView


def add_generated(root: click.Group, commands: Iterable[Command[Any]] = COMMANDS.values()) -> None:
    """Every command that declares ``cli``, under its group; a group's own command comes before the
    commands below it."""
    declared = sorted((c for c in commands if c.cli is not None), key=lambda c: len(c.cli.path) if c.cli else 0)
    for command in declared:
        assert command.cli is not None
        group = _group(root, command.cli.group.split(), command.name)
        group.add_command(build(command))


def _group(root: click.Group, path: list[str], name: str) -> click.Group:
    group = root
    for part in path:
        found = group.commands.get(part)
        if not isinstance(found, click.Group):
            raise WiringError(f"{name}: no command group {' '.join(path)!r}")
        group = found
    return group


def build(command: Command[Any]) -> click.Command:
    """The click command for ``command`` (which must declare ``cli``)."""
    spec = command.cli
    assert spec is not None, f"{command.name} declares no CLI"

    def run(config_path: Path | None, data_dir: Path | None, as_json: bool, **values: Any) -> None:
        ctx = click.get_current_context()
        if spec.is_group and ctx.invoked_subcommand is not None:
            return  # the group's own command runs only when no command below it is named
        given, flags = request_values(spec, values)
        with _progress(spec):
            doc = run_command(config_path, data_dir, command.name, given)
        view = CliView(command.from_options(given), lambda: resolve(config_path, data_dir), flags)
        answer = answer_text(spec, doc, view, as_json=as_json)
        click.echo(answer.text, nl=answer.newline)
        if answer.exit_code:
            ctx.exit(answer.exit_code)

    callback = location_options(handles_errors(run))
    location = getattr(callback, "__click_params__", [])
    every = [*parameters(spec, command.request), *reversed(location)]
    if spec.is_group:
        return click.Group(
            spec.name, params=every, callback=callback, help=command.summary, invoke_without_command=True
        )
    return click.Command(spec.name, params=every, callback=callback, help=command.summary)


def _progress(spec: CliSpec) -> AbstractContextManager[None]:
    if spec.progress is None:
        return nullcontext()
    steps, label = spec.progress()
    return progress_bar_on_first_step(steps, label)
