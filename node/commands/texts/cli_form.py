"""A command's command-line form, from its declaration (``CliSpec`` and the request model): the
click parameters, what a person's values become (the request's arguments and the CLI's own flags),
and the text and exit code an answer reads as.

The generated CLI (``node.cli.generated``) and a daemon answering a command line itself
(``POST /v1/cli``, ``node.servers.cli_call``) both use it, so a command parses and reads the same
whichever process runs it.
"""

from __future__ import annotations

import enum
import json
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import annotated_types
import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from node.commands.texts.view import CliView

#: ``convert`` functions marked with ``reads_the_callers_files``: what they read is on the caller's
#: side (its files, its working directory), so only the caller's own process may run them.
_CALLERS_FILES = "_reads_the_callers_files"
STDIN = "-"  # the value that means "read standard input", which only the caller's process has


@dataclass(frozen=True, slots=True)
class CliSpec:
    """How a command appears on the command line when ``node.cli.generated`` builds it from the
    request model: its group path ("" for the top, "memory", "memory quarantine") and name, the
    fields taken as positional arguments, option names that differ from the field names, and how a
    person reads the answer (``--json`` prints it whole).

    ``defaults`` are a person's defaults where they differ from an API caller's; ``convert`` turns
    what a person types into the field's value ("--tags a,b" into a list, "--duration 5m" into
    seconds); ``progress`` names the steps a local run reports and the bar's label; a ``group``
    command is also the group of the commands below it (``wallet`` and ``wallet fund``)."""

    group: str
    name: str
    arguments: tuple[str, ...] = ()
    options: Mapping[str, str] = field(default_factory=dict)  # field -> "--flag"
    render: Callable[[Any, CliView], str] | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)
    convert: Mapping[str, Callable[[str], Any]] = field(default_factory=dict)
    progress: Callable[[], tuple[int, str]] | None = None
    is_group: bool = False
    newline: bool = True  # False: the text is printed as it is (a bootstrap text ends as it ends)
    #: Flags of the command line alone, for how the answer reads ("--explain": every factor), by help.
    flags: Mapping[str, str] = field(default_factory=dict)
    #: The exit code an answer means (a purchase still pending: 1); 0 when not given.
    exit_code: Callable[[Any], int] | None = None

    @property
    def path(self) -> tuple[str, ...]:
        return (*self.group.split(), self.name)


def reads_the_callers_files(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """Mark a ``CliSpec.convert`` function that reads files named on the command line."""
    setattr(convert, _CALLERS_FILES, True)
    return convert


def answerable_by_the_daemon(spec: CliSpec) -> bool:
    """Whether the daemon may parse and answer this command line itself: not when the command shows
    a progress bar here, nor when one of its values names a file on the caller's side."""
    return spec.progress is None and not any(getattr(c, _CALLERS_FILES, False) for c in spec.convert.values())


def location_parameters() -> list[click.Parameter]:
    """``--data-dir`` and ``--config``: where the node is, on every command line (``node.cli.common``
    adds them to each command; a daemon answering a line parses them the same way)."""
    return [
        click.Option(
            ["--data-dir"],
            type=click.Path(path_type=Path, file_okay=False),
            default=None,
            help="Where the node keeps its files (default: the platform's user data dir).",
        ),
        click.Option(
            ["--config", "config_path"],
            type=click.Path(path_type=Path, dir_okay=True),
            default=None,
            help="TOML config file (default: $BITTERBOT_CONFIG, or <data dir>/config.toml, or built-in defaults).",
        ),
    ]


def parameters(spec: CliSpec, request: type[BaseModel]) -> list[click.Parameter]:
    """An argument or option per request field (type, bounds, default and help from the model), the
    CLI's own flags, and ``--json``; not ``--config``/``--data-dir``, which say where the node is."""
    params = [_param(spec, name, info) for name, info in request.model_fields.items()]
    params += [click.Option([f"--{flag}"], is_flag=True, help=help) for flag, help in spec.flags.items()]
    params.append(click.Option(["--json", "as_json"], is_flag=True, help="The answer as JSON."))
    return params


def request_values(spec: CliSpec, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, bool]]:
    """What click parsed (without ``--json`` and the location options) as the request's options
    and the CLI's own flags."""
    rest = dict(values)
    flags = {flag: bool(rest.pop(flag.replace("-", "_"))) for flag in spec.flags}
    return {name: _given(spec, name, value) for name, value in rest.items()}, flags


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    newline: bool
    exit_code: int


def answer_text(spec: CliSpec, doc: Any, view: CliView, *, as_json: bool) -> Answer:
    """How the answer reads: whole as JSON (``--json``, or a command with no rendering), else its
    rendering; with the exit code the answer means (``CliSpec.exit_code``)."""
    if as_json or spec.render is None:
        return Answer(json.dumps(doc, indent=2), True, 0)  # the answer whole, for a program to judge
    code = spec.exit_code(doc) if spec.exit_code is not None else 0
    return Answer(spec.render(doc, view), spec.newline, code or 0)


def _given(spec: CliSpec, name: str, value: Any) -> Any:
    """What the person typed as the field's value. A repeatable option given no times is left out
    (None), so a field whose default is None ("keep as it is") is not set to an empty list."""
    if isinstance(value, tuple):
        value = list(value) or None
    convert = spec.convert.get(name)
    return convert(value) if convert is not None and value is not None else value


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
