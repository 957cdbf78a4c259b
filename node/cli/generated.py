"""Command-line commands built from their ``Command``: a command that declares ``cli=CliSpec(...)``
appears under its group with an argument or option per request field (its type, bounds, default
and help from the request model), ``--json``, ``--config`` and ``--data-dir``, and runs like every
other (in the daemon when one runs, else here if ``local``).

Hand-written CLI commands remain only for what is not a command: starting the daemon, bulk work on
the files (import, export, backup), the config and the doctor."""

from __future__ import annotations

import enum
import json
import types
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import annotated_types
import click
from pydantic.fields import FieldInfo

from ground.errors import WiringError
from node.cli.common import handles_errors, location_options, resolve
from node.cli.progress import progress_bar_on_first_step
from node.cli.transport import run_command
from node.commands.catalog import COMMANDS
from node.commands.registry import CliSpec, Command
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
    params = [_param(spec, name, info) for name, info in command.request.model_fields.items()]
    params += [click.Option([f"--{flag}"], is_flag=True, help=help) for flag, help in spec.flags.items()]
    params.append(click.Option(["--json", "as_json"], is_flag=True, help="The answer as JSON."))

    def run(config_path: Path | None, data_dir: Path | None, as_json: bool, **values: Any) -> None:
        ctx = click.get_current_context()
        if spec.is_group and ctx.invoked_subcommand is not None:
            return  # the group's own command runs only when no command below it is named
        flags = {flag: bool(values.pop(flag.replace("-", "_"))) for flag in spec.flags}
        given = {name: _given(spec, name, value) for name, value in values.items()}
        with _progress(spec):
            doc = run_command(config_path, data_dir, command.name, given)
        if as_json or spec.render is None:
            click.echo(json.dumps(doc, indent=2))  # the answer whole, for a program to judge
            return
        view = CliView(command.from_options(given), lambda: resolve(config_path, data_dir), flags)
        click.echo(spec.render(doc, view), nl=spec.newline)
        if spec.exit_code is not None and (code := spec.exit_code(doc)):
            ctx.exit(code)

    callback = location_options(handles_errors(run))
    location = getattr(callback, "__click_params__", [])
    every = [*params, *reversed(location)]
    if spec.is_group:
        return click.Group(
            spec.name, params=every, callback=callback, help=command.summary, invoke_without_command=True
        )
    return click.Command(spec.name, params=every, callback=callback, help=command.summary)


def _given(spec: CliSpec, name: str, value: Any) -> Any:
    """What the person typed as the field's value. A repeatable option given no times is left out
    (None), so a field whose default is None ("keep as it is") is not set to an empty list."""
    if isinstance(value, tuple):
        value = list(value) or None
    convert = spec.convert.get(name)
    return convert(value) if convert is not None and value is not None else value


def _progress(spec: CliSpec) -> AbstractContextManager[None]:
    if spec.progress is None:
        return nullcontext()
    steps, label = spec.progress()
    return progress_bar_on_first_step(steps, label)


def _param(spec: CliSpec, name: str, info: FieldInfo) -> click.Parameter:
    kind, many = _unwrap(info.annotation) if name not in spec.convert else (str, False)
    click_type = _click_type(kind, info)
    required = info.is_required()
    # A converted field's default is the request's own (left out: None), not its text.
    unset = required or name in spec.convert
    default = spec.defaults.get(name, None if unset else info.get_default(call_default_factory=True))
    if isinstance(default, enum.Enum):
        default = default.value
    if name in spec.arguments:
        return click.Argument(
            [name], type=click_type, required=required, nargs=-1 if many else 1, default=None if many else default
        )
    flag = spec.options.get(name, "--" + name.replace("_", "-"))
    if kind is bool and "/" in flag:  # "--success/--failure": the person says which
        return click.Option([flag, name], default=default, required=required, help=info.description)
    if kind is bool:
        return click.Option([flag, name], is_flag=True, default=bool(default), help=info.description)
    return click.Option(
        [flag, name],
        type=click_type,
        multiple=many,
        required=required,
        default=default if not many else (),
        show_default=default not in (None, (), [], ""),
        help=info.description,
    )


def _click_type(kind: Any, info: FieldInfo) -> Any:
    """The field's type for click: a choice of an enum's values, a range where the model bounds it."""
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return click.Choice([e.value for e in kind])
    if kind in (int, float):
        low: Any = None
        high: Any = None
        low_open = high_open = False
        for bound in info.metadata:
            if isinstance(bound, annotated_types.Ge):
                low = bound.ge
            elif isinstance(bound, annotated_types.Gt):
                low, low_open = bound.gt, True
            elif isinstance(bound, annotated_types.Le):
                high = bound.le
            elif isinstance(bound, annotated_types.Lt):
                high, high_open = bound.lt, True
        if low is not None or high is not None:
            ranged: Callable[..., Any] = click.IntRange if kind is int else click.FloatRange
            return ranged(low, high, min_open=low_open, max_open=high_open)
    return kind


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
