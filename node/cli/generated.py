"""Command-line commands built from their ``Command``: a command that declares ``cli=CliSpec(...)``
appears under its group with an option per request field, ``--json``, ``--config`` and
``--data-dir``, and runs like every other (in the daemon when one runs, else here if ``local``).

Hand-written CLI commands remain where a person needs more than the fields (a progress bar, a
table, a passphrase prompt); they call the same ``run_command``."""

from __future__ import annotations

import enum
import json
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import click
from pydantic.fields import FieldInfo

from node.cli.common import handles_errors, location_options
from node.cli.transport import run_command
from node.commands.catalog import COMMANDS
from node.commands.registry import CliSpec, Command


def add_generated(root: click.Group, commands: Iterable[Command[Any]] = COMMANDS.values()) -> None:
    """Every command that declares ``cli``, under its group (a group of ``root``, or ``root`` itself)."""
    for command in commands:
        if command.cli is None:
            continue
        group = root if command.cli.group == "" else root.commands.get(command.cli.group)
        if not isinstance(group, click.Group):
            raise ValueError(f"{command.name}: no command group {command.cli.group!r}")
        group.add_command(build(command))


def build(command: Command[Any]) -> click.Command:
    """The click command for ``command`` (which must declare ``cli``)."""
    spec = command.cli
    assert spec is not None, f"{command.name} declares no CLI"
    params = [_param(spec, name, info) for name, info in command.request.model_fields.items()]
    params.append(click.Option(["--json", "as_json"], is_flag=True, help="The answer as JSON."))

    def run(config_path: Path | None, data_dir: Path | None, as_json: bool, **values: Any) -> None:
        # A repeatable option given no times is left out (None), so a field whose default is None
        # ("keep as it is") is not set to an empty list ("clear it").
        given = {name: (list(v) or None if isinstance(v, tuple) else v) for name, v in values.items()}
        doc = run_command(config_path, data_dir, command.name, given)
        click.echo(json.dumps(doc, indent=2) if as_json or spec.render is None else spec.render(doc))

    callback = location_options(handles_errors(run))
    location = getattr(callback, "__click_params__", [])
    return click.Command(spec.name, params=[*params, *reversed(location)], callback=callback, help=command.summary)


def _param(spec: CliSpec, name: str, info: FieldInfo) -> click.Parameter:
    kind, many = _unwrap(info.annotation)
    is_enum = isinstance(kind, type) and issubclass(kind, enum.Enum)
    click_type: Any = click.Choice([e.value for e in kind]) if is_enum else kind
    if name in spec.arguments:
        return click.Argument([name], type=click_type, required=info.is_required(), nargs=-1 if many else 1)
    default = None if info.is_required() else info.get_default(call_default_factory=True)
    if isinstance(default, enum.Enum):
        default = default.value
    flag = spec.options.get(name, "--" + name.replace("_", "-"))
    if kind is bool:
        return click.Option([flag, name], is_flag=True, default=bool(default), help=info.description)
    return click.Option(
        [flag, name],
        type=click_type,
        multiple=many,
        required=info.is_required(),
        default=default if not many else (),
        show_default=default not in (None, ()),
        help=info.description,
    )


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """The field's scalar type (``X | None`` as X) and whether it takes many values (``list[X]``)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(annotation) if a is not type(None)]
        return _unwrap(inner[0]) if len(inner) == 1 else (str, False)
    if origin is list:
        return get_args(annotation)[0], True
    if annotation in (bool, int, float, str) or (isinstance(annotation, type) and issubclass(annotation, enum.Enum)):
        return annotation, False
    return str, False
