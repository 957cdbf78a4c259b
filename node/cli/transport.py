"""Where a CLI command runs: in the running daemon, or here on the files (``node.clients.connect``).

A command is named and its arguments are validated against its request model before anything
is opened; refusals become one line and an exit code (``node.error_status``). Bulk work (import,
export, re-embed) is not a command: it opens the file directly (``with_store``), which SQLite
WAL lets run beside a daemon.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from node.cli.common import resolve
from node.clients.base import ControlError
from node.clients.connect import call_node
from node.commands.catalog import command as command_named
from node.error_status import UNEXPECTED, exit_code, http_status, message_of
from node.errors import NodeError, UsageError

if TYPE_CHECKING:  # the store (SQLite extensions, numpy) loads only when a command opens the file
    from memory.intake.store import IntakeStore

T = TypeVar("T")


def run_command(config_path: Path | None, data_dir: Path | None, name: str, args: dict[str, Any] | None = None) -> Any:
    """Run the command ``name`` (in the daemon when one runs) and return its JSON-shaped answer."""
    command = command_named(name)
    loaded, paths = resolve(config_path, data_dir)
    with refusals_as_usage_errors():
        request = command.from_options(args or {})
        return asyncio.run(call_node(loaded.config, paths, command, request))


def with_store(config_path: Path | None, data_dir: Path | None, action: Callable[[IntakeStore], Awaitable[T]]) -> T:
    """Open the memory file here, run ``action`` on it, close it; store refusals are usage errors."""
    loaded, paths = resolve(config_path, data_dir)
    paths.ensure_data_dir()

    async def go() -> T:
        from node.parts.memory import open_node_store

        store = await open_node_store(loaded.config, paths)
        try:
            return await action(store)
        finally:
            await store.close()

    with refusals_as_usage_errors():
        return asyncio.run(go())


@contextmanager
def refusals_as_usage_errors() -> Iterator[None]:
    """A refusal (the daemon's, or one raised here) becomes one line and its exit code; a bug of
    ours (``UNEXPECTED``) keeps its traceback."""
    try:
        yield
    except ControlError as exc:
        raise refusal(exc.status, str(exc)) from None
    except NodeError:
        raise
    except Exception as exc:
        status = http_status(exc)
        if status == UNEXPECTED:
            raise
        raise refusal(status, message_of(exc)) from None


def refusal(status: int, message: str) -> NodeError:
    """A refusal as the CLI's error, with the exit code ``node.error_status`` gives its status."""
    refused = UsageError(message)
    refused.exit_code = exit_code(status)
    return refused
