"""Shared helpers: run the real `bitterbot-node` command in a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import settings

from ground.clock import Clock, wall_clock_ms
from memory.embedders.hashing import HashingEmbedder
from memory.graph import auto_link
from memory.storage.store import MemoryStore

# No deadline per example: a deadline is a timed assertion, and on a loaded 2-core machine (two
# test workers beside daemons) an example of the envelope properties took more than 200 ms.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")

CLI = [sys.executable, "-m", "node"]


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any BITTERBOT_* setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BITTERBOT_")}
    # Any free ports: tests run daemons side by side and must not need ports 4001 and 7420.
    env["BITTERBOT_P2P__LISTEN"] = '["/ip4/127.0.0.1/tcp/0"]'
    env["BITTERBOT_API__PORT"] = "0"
    env.update(extra)
    return env


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], env=env or clean_env(), capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def clock() -> Clock:
    """The store's clock: the wall clock here; tests/memory overrides it with a FakeClock it moves."""
    return wall_clock_ms


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[MemoryStore]:
    """A real store with the hashing embedder, graph links, and the ``clock`` fixture's time."""
    s = await MemoryStore.open(tmp_path / "memory.db", HashingEmbedder(), now_ms=clock, on_embedded=auto_link)
    try:
        yield s
    finally:
        await s.close()
