"""Where a CLI command runs: in the running daemon (through its API) or, when none runs, here.

Commands that change memory go through the daemon when it runs, so one process owns
the working-memory files, the consolidation and dream locks and the metrics; with no
daemon the CLI opens the memory file itself, which is then safe because nobody else
has it open. Network and market commands need the daemon. Bulk work (import, export,
re-embed) opens the file directly either way: SQLite WAL lets it run beside a daemon.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memory.errors import CrystalNotFound, InvalidQuery, MemoryError_
from node.cli.common import resolve
from node.clients.daemon import find_daemon
from node.commands.memory_requests import InvalidRequest
from node.error_status import exit_code
from node.errors import NodeError, UsageError
from node.servers.control import CommandUnavailable, ControlError

if TYPE_CHECKING:  # the store (SQLite extensions, numpy) loads only when a command opens the file
    from memory.storage.store import MemoryStore

T = TypeVar("T")


def with_store(config_path: Path | None, data_dir: Path | None, action: Callable[[MemoryStore], Awaitable[T]]) -> T:
    """Open the memory file here, run ``action`` on it, close it; store refusals are usage errors."""
    loaded, paths = resolve(config_path, data_dir)
    paths.ensure_data_dir()

    async def go() -> T:
        from node.parts.memory import open_store

        store = await open_store(loaded.config, paths)
        try:
            return await action(store)
        finally:
            await store.close()

    try:
        return asyncio.run(go())
    except (InvalidQuery, CrystalNotFound, InvalidRequest) as exc:
        raise UsageError(str(exc)) from None
    except MemoryError_ as exc:
        raise UsageError(f"memory: {exc}") from None


def call_daemon(
    config_path: Path | None,
    data_dir: Path | None,
    cmd: str,
    args: dict[str, Any] | None = None,
    *,
    timeout: float = 30,
) -> Any:
    """One command to the running daemon; no daemon, or its refusal, is a usage error (exit 2)."""
    _, paths = resolve(config_path, data_dir)
    client = find_daemon(paths)
    if client is None:
        raise UsageError(f"no daemon is running on {paths.data_dir}: start it with `bitterbot-node run`")
    try:
        return client.call(cmd, args, timeout=timeout)
    except ControlError as exc:
        raise refusal(exc) from None


def daemon_or_store(
    config_path: Path | None,
    data_dir: Path | None,
    cmd: str,
    args: dict[str, Any],
    direct: Callable[[MemoryStore], Awaitable[T]],
    *,
    timeout: float = 60,
) -> Any:
    """``cmd`` in the running daemon; with no daemon (or one without the part that serves
    ``cmd``), ``direct`` on the memory file here. Both answer with the same JSON shape."""
    _, paths = resolve(config_path, data_dir)
    client = find_daemon(paths)
    if client is not None:
        try:
            return client.call(cmd, args, timeout=timeout)
        except CommandUnavailable:
            pass  # e.g. skills commands on a node running without P2P: the file is the only way
        except ControlError as exc:
            raise refusal(exc) from None
    return with_store(config_path, data_dir, direct)


def refusal(error: ControlError) -> NodeError:
    """A daemon's refusal as the CLI's error, with the exit code ``node.error_status`` gives its status."""
    refused = UsageError(str(error))
    refused.exit_code = exit_code(error.status)
    return refused
