"""Where a node keeps its files, and how the data dir and config file are chosen."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ground.app import user_data_folder
from node.config import Config
from node.config_loading import ENV_CONFIG_FILE, ENV_DATA_DIR
from node.errors import UsageError

if TYPE_CHECKING:
    from memory.working_memory.memory_md import WorkingMemoryFiles

IMPLICIT_CONFIG_NAME = "config.toml"


def _under(data_dir: Path, configured: str) -> Path:
    path = Path(configured).expanduser()
    return path if path.is_absolute() else data_dir / path


def default_data_dir() -> Path:
    """The platform's per-user data directory (``~/.local/share/bitterbot-node`` on Linux)."""
    return user_data_folder()


def choose_config_path(cli_path: Path | None, cli_data_dir: Path | None, environ: Mapping[str, str]) -> Path | None:
    """``--config``, else ``$BITTERBOT_CONFIG``, else ``<data dir>/config.toml`` if it exists, else None."""
    if cli_path is not None:
        return cli_path
    if environ.get(ENV_CONFIG_FILE):
        return Path(environ[ENV_CONFIG_FILE])
    base = cli_data_dir or (Path(environ[ENV_DATA_DIR]) if environ.get(ENV_DATA_DIR) else default_data_dir())
    implicit = base / IMPLICIT_CONFIG_NAME
    return implicit if implicit.is_file() else None


def choose_data_dir(cli_data_dir: Path | None, config: Config, environ: Mapping[str, str]) -> Path:
    """``--data-dir``, else ``$BITTERBOT_DATA_DIR``, else ``node.data_dir``, else the platform default."""
    if cli_data_dir is not None:
        chosen = cli_data_dir
    elif environ.get(ENV_DATA_DIR):
        chosen = Path(environ[ENV_DATA_DIR])
    elif config.node.data_dir:
        chosen = Path(config.node.data_dir)
    else:
        chosen = default_data_dir()
    return chosen.expanduser().resolve()


@dataclass(frozen=True, slots=True)
class NodePaths:
    """Every file the node owns, relative to one data dir."""

    data_dir: Path
    key_file: Path

    @classmethod
    def of(cls, data_dir: Path, config: Config) -> NodePaths:
        return cls(
            data_dir,
            _under(data_dir, config.identity.key_file),
            _under(data_dir, config.memory.db_file),
            _under(data_dir, config.dream.workspace_dir),
            _under(data_dir, config.p2p.trust_file),
        )

    memory_db: Path | None = None
    workspace: Path | None = None  # MEMORY.md and memory/scratch.md
    trust_file: Path | None = None  # observed peer outcomes and received attestations

    def working_memory_files(self) -> WorkingMemoryFiles:
        """MEMORY.md and scratch.md in this node's workspace (loaded when asked: describing paths
        must stay cheap for the CLI)."""
        from memory.working_memory.memory_md import WorkingMemoryFiles

        assert self.workspace is not None  # ``NodePaths.of`` always sets it
        return WorkingMemoryFiles(self.workspace)

    @property
    def lock_file(self) -> Path:
        return self.data_dir / "node.lock"

    @property
    def control_socket(self) -> Path:
        return self.data_dir / "control.sock"

    @property
    def status_file(self) -> Path:
        return self.data_dir / "status.json"

    @property
    def device_group_file(self) -> Path:
        """The person's device group this node is in (``memory.devices.group_file``)."""
        return self.data_dir / "devices" / "group.bin"

    @property
    def api_token_file(self) -> Path:
        """The agent's bearer token: what an agent beside the node (API, MCP) authenticates with."""
        return self.data_dir / "api.token"

    @property
    def owner_token_file(self) -> Path:
        """The person's bearer token: the CLI's. Only it (or a dashboard session) may approve or
        reject held content; give the agent ``api.token`` and never this file."""
        return self.data_dir / "owner.token"

    def check_can_be_a_folder(self) -> None:
        """A data dir at or under a file is a usage error naming the fix, for every command (each
        read of it failed with NotADirectoryError before issue 32)."""
        there = _nearest_existing(self.data_dir)
        if not there.is_dir():
            raise UsageError(_unusable(self.data_dir, f"{there} is a file, not a folder"))

    def ensure_data_dir(self) -> None:
        """Create the data dir, private to this user; a data dir this user cannot write is a usage
        error naming the fix (it was a PermissionError traceback and exit 1 before issue 32)."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(self.data_dir, 0o700)
        except OSError as exc:
            raise UsageError(_unusable(self.data_dir, exc.strerror or str(exc))) from None
        problem = write_problem(self.data_dir)
        if problem is not None:
            raise UsageError(_unusable(self.data_dir, problem))


def _unusable(data_dir: Path, why: str) -> str:
    return (
        f"cannot use the data dir {data_dir}: {why}; pick another with --data-dir (or ${ENV_DATA_DIR}) "
        "or make it writable for this user"
    )


def _nearest_existing(path: Path) -> Path:
    """``path`` itself if it exists, else the nearest folder above it that does."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def write_problem(folder: Path) -> str | None:
    """Why this user cannot write in ``folder`` (or in the nearest folder above it that exists, where
    it would be made), or None. It tries: a file is made and removed, since permission bits say
    nothing to root and nothing of a read-only mount."""
    there = _nearest_existing(folder)
    if not there.is_dir():
        return f"{there} is a file, not a folder"
    try:
        handle, name = tempfile.mkstemp(dir=there, prefix=".bitterbot-write-check-")
        os.close(handle)
        os.unlink(name)
    except OSError as exc:
        return f"{there} is not writable ({exc.strerror or exc})"
    return None
