"""The tests' CLI calls (forked from a process that has imported the CLI) answer as a fresh
``bitterbot-node`` interpreter does: the same output, errors and exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from node.runtime.status import probe_daemon
from tests.cli_zygote import CliZygote
from tests.conftest import CLI, clean_env, run_cli, start_cli

pytestmark = pytest.mark.slow  # real processes (`-m "not slow"` skips them)


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("status",),  # before init: says what to do, exit code 2
        ("memory", "search"),  # a missing argument: click's usage error
        ("no-such-command",),
        ("config", "check"),
    ],
)
def test_a_forked_call_answers_as_a_fresh_interpreter(tmp_path: Path, args: tuple[str, ...]) -> None:
    env = clean_env(BITTERBOT_DATA_DIR=str(tmp_path / "node"))
    forked = run_cli(*args, env=env)
    fresh = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


def test_the_call_gets_its_environment_and_folder_and_the_server_keeps_its_own(tmp_path: Path) -> None:
    data = tmp_path / "node"
    first = run_cli("init", env=clean_env(BITTERBOT_DATA_DIR=str(data)))
    assert first.returncode == 0, first.stderr
    assert (data / "identity.key").exists()
    # The next call has its own setting, not the first call's.
    elsewhere = tmp_path / "elsewhere"
    other = run_cli("status", env=clean_env(BITTERBOT_DATA_DIR=str(elsewhere)))
    assert other.returncode == 0 and str(elsewhere) in other.stdout and "none yet" in other.stdout


def test_a_call_past_its_timeout_is_killed_and_the_server_goes_on(tmp_path: Path) -> None:
    server = CliZygote()
    try:
        env = clean_env(BITTERBOT_DATA_DIR=str(tmp_path / "node"))
        assert server.run(["init"], env, 60).returncode == 0
        with pytest.raises(subprocess.TimeoutExpired):
            server.run(["run"], env, 3)  # a daemon runs until stopped
        assert server.run(["--version"], env, 60).returncode == 0
    finally:
        server.close()


@pytest.mark.skipif(sys.platform != "linux", reason="daemons are forked only where a process can take in orphans")
def test_a_spawned_daemon_is_this_workers_child_to_signal_and_reap(tmp_path: Path) -> None:
    env = clean_env(BITTERBOT_DATA_DIR=str(tmp_path / "node"), BITTERBOT_P2P__ENABLED="false")
    err = tmp_path / "daemon.err"
    err.touch()
    daemon = start_cli("run", env=env, stderr=err)
    try:
        with (Path("/proc") / str(daemon.pid) / "stat").open() as stat:
            parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        assert parent == os.getpid()  # taken in from the server: reaped here, its exit code read here
        while probe_daemon(tmp_path / "node").status is None:
            assert daemon.poll() is None, err.read_text()
            time.sleep(0.1)
        assert daemon.poll() is None
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=30) == 0, err.read_text()  # a clean stop
        daemon.kill()  # after the reap: nothing is signalled
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait(timeout=30)
