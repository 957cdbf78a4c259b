"""The local API's bearer token: a random secret in a 0600 file in the data dir."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from node.errors import UsageError


class TokenFileError(UsageError):
    pass


def ensure_token(path: Path) -> str:
    """The API token: created (0600) when missing; refused with the fix when others can read it."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(token + "\n")
        return token
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise TokenFileError(f"{path} is readable by others (mode {mode:o}); fix it with: chmod 600 {path}")
    token = path.read_text().strip()
    if len(token) < 32:
        raise TokenFileError(f"{path} does not hold an API token; delete it and a new one is made")
    return token
