"""Errors of the node package, and the process exit codes they map to.

    NodeError (a ``ground.errors.BitterbotError``)
    ├── ConfigError          a config file or environment override is wrong   -> exit 2
    ├── UsageError           a command was given something it cannot use       -> exit 2
    ├── AlreadyRunning       another daemon holds the data dir's lock          -> exit 3
    ├── PartNotRunning       a part a command needs is off or not started      -> exit 2, HTTP 503
    │   └── PartOff          ... and is off on this node by config: a client may run the command
    │                        in-process on the files instead (answers say ``"unavailable": true``)
    ├── DaemonRequired       a command only a running daemon can run, and none runs -> exit 2
    └── UnknownCommand       no command has this name (a client newer than its daemon) -> HTTP 404

What every error of every package means to a client (HTTP status, exit code) is decided in
one table, ``node.error_status``.

Key file problems (``crypto.errors.KeyFileError``) also exit 2. Any other
failure of a running daemon exits 1. A clean stop exits 0.
"""

from __future__ import annotations

from ground.errors import BitterbotError, Invalid, NotFound, Unavailable

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_ALREADY_RUNNING = 3
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report it (128 + SIGINT)


class NodeError(BitterbotError):
    exit_code = EXIT_FAILURE


class ConfigError(NodeError):
    """Says which file (or environment variable), which key, and what was expected."""

    exit_code = EXIT_USAGE

    def __init__(self, source: str, message: str, key: str | None = None) -> None:
        where = f"{source}: key '{key}'" if key else source
        super().__init__(f"config error in {where}: {message}")
        self.source = source
        self.key = key


class UsageError(NodeError):
    exit_code = EXIT_USAGE


class AlreadyRunning(NodeError):
    exit_code = EXIT_ALREADY_RUNNING

    def __init__(self, data_dir: str, pid: int | None) -> None:
        who = f"pid {pid}" if pid else "another process"
        super().__init__(
            f"data dir {data_dir} is in use by a running bitterbot-node ({who}); "
            "stop it first, or give this one another --data-dir"
        )
        self.pid = pid


class PartNotRunning(NodeError, Unavailable):
    """A part a command needs is off or not started yet (the memory store, the p2p host): HTTP 503."""

    exit_code = EXIT_USAGE


class PartOff(PartNotRunning):
    """The part that serves a command is not part of this node (e.g. P2P disabled)."""

    def __init__(self, command: str) -> None:
        super().__init__(f"{command} is not available on this node (is its part enabled?)")


class DaemonRequired(UsageError):
    """A command that needs the running daemon (the network, the market), and none runs here."""

    def __init__(self, command: str, data_dir: str) -> None:
        super().__init__(f"{command} needs the running daemon: no daemon runs on {data_dir} (bitterbot-node run)")


class UnknownCommand(NodeError, LookupError):
    """No command has this name (a client newer or older than the daemon it talks to)."""

    exit_code = EXIT_USAGE


class NotEnabled(NodeError, Unavailable):
    """A feature the command needs is off in this node's config (curiosity, …): HTTP 503."""

    exit_code = EXIT_USAGE


class NotFoundHere(NodeError, NotFound):
    """What a command asked for is not on this node (a listing no seller offers here): HTTP 404."""

    exit_code = EXIT_USAGE


class InvalidValue(NodeError, Invalid):
    """A value given to ``node`` is wrong (also a ValueError): the message says which and why."""

    exit_code = EXIT_USAGE
