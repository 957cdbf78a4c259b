"""Memory's files are personal data: folders 0700, files 0600, whatever the umask says.

The data dir is 0700 already, but a memory file copied or a data dir opened up (a shared
volume, a backup tool) should not take its contents with it: each file and folder says
for itself that it is the owner's alone. Existing ones are tightened when opened, so data
dirs made by releases that created them 0644/0755 are fixed on upgrade.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make it the owner's alone."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    os.chmod(path, DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty if missing, and make it and its SQLite companions (-wal, -shm) the owner's
    alone. SQLite creates a WAL with its database's mode, so a 0600 database keeps its WAL 0600."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    for companion in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(companion, FILE_MODE)
    return path
