"""The application's name, and the per-user folders named after it (platformdirs: on Linux
``~/.local/share/bitterbot-node`` for data, ``~/.cache/bitterbot-node`` for what can be made again)."""

from __future__ import annotations

from pathlib import Path

APP_NAME = "bitterbot-node"


def user_data_folder() -> Path:
    import platformdirs  # here: the thin CLI imports this module and answers most calls without it

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_cache_folder() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
