"""Shared helpers: run the real `bitterbot-node` command in a clean environment."""

from __future__ import annotations

import atexit
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from ground.clock import Clock, wall_clock_ms
from memory.embedders.hashing import HashingEmbedder
from memory.graph.links import auto_link
from memory.intake.store import IntakeStore
from tests.cli_zygote import CannotSpawn, CliZygote, Process

# No deadline per example: a deadline is a timed assertion, and on a loaded 2-core machine (two
# test workers beside daemons) an example of the envelope properties took more than 200 ms.
settings.register_profile("no-deadline", deadline=None)
settings.load_profile("no-deadline")

CLI = [sys.executable, "-m", "node"]

# Every child process (each CLI call, daemon, walkthrough) keeps the bytecode it compiles. Where
# PYTHONDONTWRITEBYTECODE is set (this machine's image sets it), each one otherwise compiled every
# module of ours again: measured, a daemon's imports took 2.4 s instead of 0.8 s, and a CLI call
# 0.44 s instead of 0.39 s. In the usual __pycache__ folders (ignored by git): a prefix folder for
# all of them (PYTHONPYCACHEPREFIX), as before, also set aside the bytecode pip wrote for the
# installed libraries, so in a fresh clone every worker and child compiled web3, py-libp2p and the
# rest again (+2.6 s of CPU a process for those two and a few more, until one had written them).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any BITTERBOT_* setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BITTERBOT_")}
    # Any free ports: tests run daemons side by side and must not need ports 4001 and 7420.
    env["BITTERBOT_P2P__LISTEN"] = '["/ip4/127.0.0.1/tcp/0"]'
    env["BITTERBOT_API__PORT"] = "0"
    env.update(extra)
    return env


#: A CLI call's own limit, there to name a hung command rather than to time a slow one: just under the
#: suite's 120 s per test. At 30 s, a `memory add` whose daemon loaded its model for the first time
#: overran it while a benchmark ran beside the suite (the add was correct, only slow).
CLI_TIMEOUT_S = 100.0


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = CLI_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """``bitterbot-node *args`` in a process of its own, forked from one that has imported the CLI
    (``tests.cli_zygote``), with stdin empty."""
    return _CLI_SERVER.run(list(args), env or clean_env(), timeout)


def start_cli(*args: str, env: dict[str, str], stderr: Path) -> Process:
    """``bitterbot-node *args`` left running (a daemon), stdout to /dev/null, stderr to ``stderr``
    (an existing file): forked as ``run_cli``'s calls are where the test worker can take in orphans
    (Linux), a fresh interpreter elsewhere."""
    try:
        return _CLI_SERVER.spawn(list(args), env, Path(os.devnull), stderr)
    except CannotSpawn:
        with stderr.open("w") as err:
            return subprocess.Popen(
                [*CLI, *args], env=env, stdout=subprocess.DEVNULL, stderr=err, text=True, stdin=subprocess.DEVNULL
            )


_CLI_SERVER = CliZygote()
atexit.register(_CLI_SERVER.close)


TESTS = Path(__file__).resolve().parent
#: Test files that run whole on one worker: those declaring a module-scoped fixture (a daemon the
#: file's tests share, set up once) or an xdist group (the README walkthrough's fixed ports).
_SHARES = re.compile(r'scope="module"|xdist_group')
KEPT_WHOLE = frozenset(
    str(path.relative_to(TESTS.parent)) for path in TESTS.rglob("test_*.py") if _SHARES.search(path.read_text())
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Real processes first: the long tests start while the quick ones wait to fill the gaps at the
    end (the workers take tests in this order, ``--no-loadscope-reorder``). Stable: each file keeps
    its own order."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Tests go to the workers one at a time, so no worker is left alone with one long file, except
    the files in ``KEPT_WHOLE``. (xdist's own ``loadgroup`` does this from marks, but with pytest 9.2
    it silently stops grouping: pytest-dev/pytest-xdist#1386.)"""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class OneTestAtATime(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return file if file in KEPT_WHOLE else nodeid

    return OneTestAtATime(config, log)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def clock() -> Clock:
    """The store's clock: the wall clock here; tests/memory overrides it with a FakeClock it moves."""
    return wall_clock_ms


@pytest.fixture
async def store(tmp_path: Path, clock: Clock) -> AsyncIterator[IntakeStore]:
    """A real store with the hashing embedder, graph links, and the ``clock`` fixture's time."""
    s = await IntakeStore.open(tmp_path / "memory.db", HashingEmbedder(), now_ms=clock, on_embedded=auto_link)
    try:
        yield s
    finally:
        await s.close()
