"""A command line answered by the daemon itself (``POST /v1/cli``, the person's token only).

The thin CLI (``node.cli.thin``) sends its arguments, the ``BITTERBOT_*`` settings it runs with and
its working directory, and prints what comes back: a call through the daemon then costs the
interpreter's start and one request, not the CLI's imports (issue 31: at most 150 ms).

The daemon parses the line with the click parameters the full CLI builds from the same declaration
(``node.commands.texts.cli_form``), runs the command as the person, and answers the text the full
CLI would print and its exit code. It declines (``{"fallback": true}``), and the thin CLI runs the
full one, wherever only the caller's own process gives the right answer:
- not a command the daemon answers (``run``, ``import``, ``backup``...; of the hand-written ones it
  answers ``status``), or one with a progress bar
  or a value naming a file on the caller's side;
- help, standard input (``-``), and any line click refuses (the full CLI prints click's own words);
- a config or setting the full CLI would refuse, or one that names another data dir;
- a command whose part is off here (the full CLI runs it on the files when it may).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel, ValidationError

from ground.events import get_logger
from node.commands.catalog import COMMANDS
from node.commands.registry import Command
from node.commands.texts.cli_form import (
    STDIN,
    CliSpec,
    answer_text,
    answerable_by_the_daemon,
    location_parameters,
    parameters,
    request_values,
)
from node.commands.texts.view import CliView
from node.config_loading import ENV_KEY_PASSPHRASE, ENV_PREFIX, LoadedConfig, load_config
from node.error_status import UNEXPECTED, exit_code, http_status, message_of, refusal_of
from node.errors import NodeError
from node.paths import NodePaths, choose_config_path, choose_data_dir
from node.runtime.status_report import status_report, status_text

log = get_logger("node.cli_call")
FALLBACK: dict[str, Any] = {"fallback": True}
HELP = frozenset({"-h", "--help"})
Run = Callable[[Command[Any], dict[str, Any]], Awaitable[Any]]
Observe = Callable[[str, int], None]  # a command answered, with the HTTP status its route would give


def _by_path() -> dict[tuple[str, ...], Command[Any]]:
    return {c.cli.path: c for c in COMMANDS.values() if c.cli is not None and answerable_by_the_daemon(c.cli)}


BY_PATH = _by_path()


def _found(argv: list[str]) -> tuple[Command[Any], list[str]] | None:
    """The command the line names (the longest path its first words spell) and the rest of the line."""
    for length in range(min(len(argv), 3), 0, -1):
        command = BY_PATH.get(tuple(argv[:length]))
        if command is not None:
            return command, argv[length:]
    return None


def _click_command(spec: CliSpec, request: type[BaseModel]) -> click.Command:
    return click.Command(spec.name, params=[*parameters(spec, request), *location_parameters()])


def _status(
    rest: list[str], environ: Mapping[str, str], cwd: Path, locate: Callable[[], tuple[LoadedConfig, NodePaths]]
) -> dict[str, Any]:
    """``status`` as the full CLI prints it (``node.runtime.status_report``), from this daemon's files."""
    line = click.Command("status", params=[click.Option(["--json", "as_json"], is_flag=True), *location_parameters()])
    try:
        with line.make_context("status", rest) as ctx:
            values = dict(ctx.params)
    except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        return FALLBACK
    view = _callers_view(values, environ, cwd, locate()[1])
    if view is None:
        return FALLBACK
    report = status_report(*view)  # the caller's config (its name and role), as the full CLI reads it
    text = json.dumps(report, indent=2) if values["as_json"] else status_text(report)
    return {"stdout": text, "newline": True, "stderr": "", "exit_code": 0}


def _callers_view(
    values: Mapping[str, Any], environ: Mapping[str, str], cwd: Path, paths: NodePaths
) -> tuple[LoadedConfig, NodePaths] | None:
    """The config and paths the full CLI would resolve where the caller runs, when they are valid
    and name this node's data dir; else None."""

    def anchored(given: Path | None) -> Path | None:
        return None if given is None else cwd / given.expanduser()

    data_dir = anchored(values["data_dir"])
    try:
        loaded = load_config(choose_config_path(anchored(values["config_path"]), data_dir, environ), environ)
        chosen = choose_data_dir(data_dir, loaded.config, environ)
    except (NodeError, OSError, ValueError):  # the full CLI refuses these, in its own words
        return None
    return (loaded, NodePaths.of(chosen, loaded.config)) if chosen == paths.data_dir.resolve() else None


async def answer(
    body: Mapping[str, Any], run: Run, locate: Callable[[], tuple[LoadedConfig, NodePaths]], observe: Observe
) -> dict[str, Any]:
    """The answer to one command line: ``{"stdout", "newline", "stderr", "exit_code"}``, or
    ``FALLBACK``. ``run`` runs a command as the person; ``locate`` gives this daemon's config and
    paths; ``observe`` counts the command run, as its own route counts a request."""
    argv, environ, cwd = _the_call(body)
    if argv is None or STDIN in argv or HELP & set(argv):
        return FALLBACK
    if argv[0] == "status":  # not a declaration: it works without a daemon too; the same words either way
        return _status(argv[1:], environ, cwd, locate)
    found = _found(argv)
    if found is None:
        return FALLBACK
    command, rest = found
    spec = command.cli
    assert spec is not None
    try:
        with _click_command(spec, command.request).make_context(spec.name, rest) as ctx:
            values = dict(ctx.params)
    except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
        return FALLBACK  # the full CLI prints click's own words for it
    if _callers_view(values, environ, cwd, locate()[1]) is None:
        return FALLBACK
    as_json = bool(values.pop("as_json"))
    del values["data_dir"], values["config_path"]
    try:  # what the full CLI refuses before it asks the daemon: a bad --duration, a field out of bounds
        given, flags = request_values(spec, values)
        request = command.from_options(given)
    except NodeError as exc:
        return _refused(str(exc), exc.exit_code)
    except ValidationError as exc:
        return _refused(message_of(exc), exit_code(http_status(exc)))
    try:
        # no deadline here, as on the command's own route: cancelling a command half done (a purchase)
        # is worse than waiting; the thin CLI's socket bounds the wait
        doc = await run(command, request.model_dump(mode="json", exclude_none=True))
        # what a person reads is rendered from the answer as JSON carries it, as when the CLI asks the API
        doc = json.loads(json.dumps(doc, default=str))
    except Exception as exc:  # what the daemon's API would answer, as the full CLI reports it
        refused = refusal_of(exc, command.name)
        if refused.unavailable:
            return FALLBACK  # the part is off here: the full CLI runs it on the files when it may
        if refused.status == UNEXPECTED:
            log.error("cli_call.failed", exc_info=True, command=command.name, error_id=refused.error_id)
        observe(command.name, refused.status)
        return _refused(refused.message, exit_code(refused.status))
    observe(command.name, 200)
    shown = answer_text(spec, doc, CliView(request, locate, flags), as_json=as_json)
    return {"stdout": shown.text, "newline": shown.newline, "stderr": "", "exit_code": shown.exit_code}


def _the_call(body: Mapping[str, Any]) -> tuple[list[str] | None, dict[str, str], Path]:
    """The line, the caller's ``BITTERBOT_*`` settings (never its key passphrase) and its working
    directory; a body that is not one of ours gives no line."""
    argv, environ, cwd = body.get("argv"), body.get("env", {}), body.get("cwd")
    nothing: tuple[None, dict[str, str], Path] = (None, {}, Path("/"))
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return nothing
    if not isinstance(cwd, str) or not Path(cwd).is_absolute() or not isinstance(environ, dict):
        return nothing
    if not all(isinstance(k, str) and k.startswith(ENV_PREFIX) and isinstance(v, str) for k, v in environ.items()):
        return nothing
    return argv, {k: v for k, v in environ.items() if k != ENV_KEY_PASSPHRASE}, Path(cwd)


def _refused(message: str, code: int) -> dict[str, Any]:
    return {"stdout": None, "newline": True, "stderr": f"error: {message}", "exit_code": code}
