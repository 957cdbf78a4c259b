"""What every CLI command shares: where the node is (--config, --data-dir), its passphrase, and
turning the errors a user can fix into one line and an exit code."""

from __future__ import annotations

import functools
import getpass
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from crypto.errors import KeyFileError
from node.commands.texts.cli_form import location_parameters
from node.config_loading import ENV_KEY_PASSPHRASE, LoadedConfig, load_config
from node.errors import EXIT_USAGE, NodeError, UsageError
from node.paths import NodePaths, choose_config_path, choose_data_dir

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(func: F) -> F:
    """Turn the errors a user can fix into one line on stderr and the documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except NodeError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except KeyFileError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def location_options(func: F) -> F:
    """``--data-dir`` and ``--config`` (``cli_form.location_parameters``, which a daemon answering the
    line parses too), attached as ``@click.option`` would attach them."""
    params = getattr(func, "__click_params__", [])
    setattr(func, "__click_params__", [*params, *location_parameters()])  # noqa: B010 - click reads this name
    return func


def resolve(config_path: Path | None, data_dir: Path | None) -> tuple[LoadedConfig, NodePaths]:
    environ = os.environ
    loaded = load_config(choose_config_path(config_path, data_dir, environ), environ)
    paths = NodePaths.of(choose_data_dir(data_dir, loaded.config, environ), loaded.config)
    paths.check_can_be_a_folder()
    return loaded, paths


def read_passphrase(passphrase_file: Path | None, *, prompt: str | None, confirm: bool = False) -> bytes | None:
    """From ``--passphrase-file``, else ``$BITTERBOT_KEY_PASSPHRASE``, else a prompt on a terminal."""
    if passphrase_file is not None:
        try:
            text = passphrase_file.read_text().rstrip("\r\n")
        except OSError as exc:
            raise UsageError(f"cannot read passphrase file {passphrase_file}: {exc.strerror}") from None
        if not text:
            raise UsageError(f"passphrase file {passphrase_file} is empty")
        return text.encode()
    if os.environ.get(ENV_KEY_PASSPHRASE):
        return os.environ[ENV_KEY_PASSPHRASE].encode()
    if prompt is None or not sys.stdin.isatty():
        return None
    first = getpass.getpass(prompt)
    if confirm and getpass.getpass("Repeat passphrase: ") != first:
        raise UsageError("the passphrases do not match")
    if not first:
        raise UsageError("an empty passphrase protects nothing")
    return first.encode()
