"""The `bitterbot-node` command as a user runs it: separate processes, real signals."""

from __future__ import annotations

import json
import os
import signal
import socket
import tempfile
import time
from pathlib import Path
from typing import IO, Any

import pytest

from node.runtime.status import probe_daemon
from tests.cli_zygote import Process
from tests.conftest import clean_env, run_cli, start_cli
from tests.daemons import wait_for

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

# The daemon's stderr goes to a file, not a pipe: a debug-level daemon fills a 64 KB pipe long
# before the test reads it, and would block on its next log line.
_STDERR: dict[int, IO[str]] = {}


def start_daemon(data_dir: Path, *extra: str, env: dict[str, str] | None = None) -> Process:
    err = tempfile.NamedTemporaryFile("w+")  # noqa: SIM115 - closed (and removed) by stop(), after the daemon exits
    proc = start_cli("run", "--data-dir", str(data_dir), *extra, env=env or clean_env(), stderr=Path(err.name))
    _STDERR[proc.pid] = err
    return proc


def wait_for_state(data_dir: Path, state: str, timeout: float = 20) -> dict[str, Any]:
    """`status --json` once the daemon is in ``state`` (watched in the files `status` reads: a CLI
    process per poll cost a core while the daemon was starting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        probe = probe_daemon(data_dir)
        if probe.running and probe.status is not None and probe.status.state == state:
            result = run_cli("status", "--data-dir", str(data_dir), "--json")
            assert result.returncode == 0, result.stderr
            report: dict[str, Any] = json.loads(result.stdout)
            if report["daemon"].get("state") == state:
                return report
        time.sleep(0.2)
    raise AssertionError(f"daemon never reached state {state!r}")


def stop(proc: Process, sig: int = signal.SIGTERM) -> tuple[int, float, str]:
    started = time.monotonic()
    proc.send_signal(sig)
    try:
        code = proc.wait(timeout=10)
    finally:
        proc.kill()
    stream = _STDERR.pop(proc.pid)
    stream.seek(0)
    err = stream.read()
    stream.close()
    return code, time.monotonic() - started, err


def test_status_counts_the_crystals_stored_since_the_daemon_started(data_dir: Path) -> None:
    """Issue 32: status showed the count from the daemon's start ("0 crystals" beside 26 stored)."""
    proc = start_daemon(data_dir)
    try:
        wait_for_state(data_dir, "running")
        for text in ("The boiler was serviced in May.", "The boiler is a Vaillant."):
            added = run_cli("memory", "add", text, "--data-dir", str(data_dir))
            assert added.returncode == 0, added.stderr
        deadline = time.monotonic() + 30
        counted = None
        while time.monotonic() < deadline and counted != 2:
            report = json.loads(run_cli("status", "--data-dir", str(data_dir), "--json").stdout)
            counted = report["daemon"]["details"]["memory"]["crystals"]
            time.sleep(0.3)
        assert counted == 2
    finally:
        code, _, err = stop(proc)
    assert code == 0, err


def test_stop_ends_the_daemon_and_waits_for_it(data_dir: Path) -> None:
    """Issue 32: there was no `bitterbot-node stop`; the README did not say how to end a daemon."""
    proc = start_daemon(data_dir)
    try:
        pid = wait_for_state(data_dir, "running")["daemon"]["pid"]
        stopped = run_cli("stop", "--data-dir", str(data_dir))
        assert stopped.returncode == 0 and f"stopped the daemon (pid {pid})" in stopped.stdout, stopped.stderr
        assert proc.wait(timeout=30) == 0  # it had already exited when stop returned: this only reaps it
        again = run_cli("stop", "--data-dir", str(data_dir))
        assert again.returncode == 0 and "no daemon is running" in again.stdout
    finally:
        code, _, err = stop(proc)
    assert code == 0 and "node.stopped" in err, err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_run_creates_an_identity_reports_running_and_stops_cleanly(data_dir: Path, sig: int) -> None:
    proc = start_daemon(data_dir)
    try:
        report = wait_for_state(data_dir, "running")
    finally:
        code, took, err = stop(proc, sig)
    assert report["daemon"]["running"] is True
    assert report["identity"]["peer_id"].startswith("12D3KooW")
    assert code == 0, err
    assert took < 5
    assert "node.started" in err and "node.stopped" in err
    assert (data_dir / "identity.key").stat().st_mode & 0o777 == 0o600
    after = json.loads(run_cli("status", "--data-dir", str(data_dir), "--json").stdout)
    assert after["daemon"]["running"] is False


def test_second_daemon_on_the_same_data_dir_is_refused(data_dir: Path) -> None:
    first = start_daemon(data_dir)
    try:
        wait_for_state(data_dir, "running")
        second = run_cli("run", "--data-dir", str(data_dir))
        assert second.returncode == 3
        assert f"in use by a running bitterbot-node (pid {first.pid})" in second.stderr
    finally:
        code, _, err = stop(first)
    assert code == 0, err


def test_lock_is_released_after_kill_9(data_dir: Path) -> None:
    first = start_daemon(data_dir)
    wait_for_state(data_dir, "running")
    first.kill()
    first.wait(timeout=10)
    _STDERR.pop(first.pid).close()
    # The status file still says running, but the lock says otherwise.
    report = json.loads(run_cli("status", "--data-dir", str(data_dir), "--json").stdout)
    assert report["daemon"]["running"] is False
    second = start_daemon(data_dir)
    try:
        wait_for_state(data_dir, "running")
    finally:
        code, _, err = stop(second)
    assert code == 0, err


def test_keys_never_appear_in_logs(data_dir: Path) -> None:
    proc = start_daemon(data_dir, env=clean_env(BITTERBOT_LOG__LEVEL="debug", BITTERBOT_LOG__FORMAT="json"))
    try:
        wait_for_state(data_dir, "running")
    finally:
        _, _, err = stop(proc)
    seed = json.loads((data_dir / "identity.key").read_text())["seed"]
    assert seed not in err
    events = [json.loads(line)["event"] for line in err.splitlines() if line.startswith("{")]
    assert "identity.created" in events and "node.started" in events


def test_init_is_idempotent_and_can_encrypt(tmp_path: Path) -> None:
    plain = run_cli("init", "--data-dir", str(tmp_path / "a"))
    assert plain.returncode == 0 and "unencrypted" in plain.stdout
    again = run_cli("init", "--data-dir", str(tmp_path / "a"))
    assert again.returncode == 0 and "already initialised" in again.stdout
    assert plain.stdout.split("peer id")[1] == again.stdout.split("peer id")[1]

    pw = tmp_path / "pw"
    pw.write_text("s3cret passphrase\n")
    enc = run_cli("init", "--data-dir", str(tmp_path / "b"), "--encrypt", "--passphrase-file", str(pw))
    assert enc.returncode == 0 and "(encrypted)" in enc.stdout
    assert "s3cret" not in (tmp_path / "b" / "identity.key").read_text()


def test_init_encrypt_seals_an_existing_plaintext_identity_and_wallet_in_place(tmp_path: Path) -> None:
    """Issue 15, finding 5: the wallet stayed plaintext on an encrypted node, and a plaintext node had
    no way to seal its keys but a new identity."""
    from marketplace.wallet import is_sealed, load_or_create_wallet, load_wallet

    data = tmp_path / "node"
    assert run_cli("init", "--data-dir", str(data)).returncode == 0
    account = load_or_create_wallet(data / "wallet.key")  # as the first market start made it
    seed = json.loads((data / "identity.key").read_text())["seed"]
    pw = tmp_path / "pw"
    pw.write_text("s3cret passphrase\n")
    sealed = run_cli("init", "--data-dir", str(data), "--encrypt", "--passphrase-file", str(pw))
    assert sealed.returncode == 0 and "(encrypted)" in sealed.stdout, sealed.stderr
    assert seed not in (data / "identity.key").read_text()
    assert is_sealed(data / "wallet.key") and account.private_key.hex() not in (data / "wallet.key").read_text()
    assert load_wallet(data / "wallet.key", b"s3cret passphrase") == account  # the same wallet, sealed
    refused = run_cli("run", "--data-dir", str(data), timeout=30)  # no passphrase given: a clear refusal
    assert refused.returncode != 0 and "passphrase" in refused.stderr


def test_encrypted_key_without_passphrase_is_a_clear_error_and_with_it_runs(tmp_path: Path) -> None:
    data_dir = tmp_path / "d"
    env = clean_env(BITTERBOT_KEY_PASSPHRASE="pass phrase")
    assert run_cli("init", "--data-dir", str(data_dir), "--encrypt", env=env).returncode == 0
    refused = run_cli("run", "--data-dir", str(data_dir))
    assert refused.returncode == 2
    assert "encrypted" in refused.stderr and "BITTERBOT_KEY_PASSPHRASE" in refused.stderr
    wrong = run_cli("run", "--data-dir", str(data_dir), env=clean_env(BITTERBOT_KEY_PASSPHRASE="nope"))
    assert wrong.returncode == 2 and "wrong passphrase" in wrong.stderr
    proc = start_daemon(data_dir, env=env)
    try:
        wait_for_state(data_dir, "running")
    finally:
        code, _, err = stop(proc)
    assert code == 0, err


def test_world_readable_key_is_refused_with_the_fix(data_dir: Path) -> None:
    assert run_cli("init", "--data-dir", str(data_dir)).returncode == 0
    os.chmod(data_dir / "identity.key", 0o644)
    result = run_cli("run", "--data-dir", str(data_dir))
    assert result.returncode == 2
    assert "chmod 600" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("config_text", "message"),
    [
        ("[log]\nlevel = 3\n", "key 'log.level'"),
        ("[node]\nport = 4001\n", "key 'node.port': unknown key"),
        ("this is not toml", "is not valid TOML"),
    ],
)
def test_bad_config_exits_2_with_a_message_not_a_traceback(tmp_path: Path, config_text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(config_text)
    for command in (["run"], ["status"], ["config", "check"]):
        result = run_cli(*command, "--config", str(path), "--data-dir", str(tmp_path / "d"))
        assert result.returncode == 2, command
        assert str(path) in result.stderr and message in result.stderr
        assert "Traceback" not in result.stderr


def test_missing_config_file_exits_2(tmp_path: Path) -> None:
    result = run_cli("run", "--config", str(tmp_path / "missing.toml"))
    assert result.returncode == 2
    assert "missing.toml: file not found" in result.stderr


def test_bad_environment_override_exits_2(data_dir: Path) -> None:
    result = run_cli("status", "--data-dir", str(data_dir), env=clean_env(BITTERBOT_LOG_LEVEL="debug"))
    assert result.returncode == 2
    assert "BITTERBOT_LOG_LEVEL: unknown variable" in result.stderr


def test_status_before_init_says_what_to_do(data_dir: Path) -> None:
    result = run_cli("status", "--data-dir", str(data_dir))
    assert result.returncode == 0
    assert "bitterbot-node init" in result.stdout
    assert "not running" in result.stdout


def test_config_check_reports_overrides(tmp_path: Path) -> None:
    result = run_cli("config", "check", "--data-dir", str(tmp_path), env=clean_env(BITTERBOT_LOG__LEVEL="debug"))
    assert result.returncode == 0
    assert "log.level from BITTERBOT_LOG__LEVEL" in result.stdout


def test_the_daemon_consolidates_and_dreams_on_its_timers(data_dir: Path) -> None:
    env = clean_env(
        BITTERBOT_MEMORY__EMBEDDER="hashing",
        BITTERBOT_CONSOLIDATION__INTERVAL_MIN="0.01",  # every 0.6 s
        BITTERBOT_DREAM__INTERVAL_MIN="0.01",
    )
    noted = run_cli("memory", "note", "Dentist moved to Tuesday", "--data-dir", str(data_dir), env=env)
    assert noted.returncode == 0, noted.stderr
    memory_md = data_dir / "workspace" / "MEMORY.md"
    proc = start_daemon(data_dir, env=env)
    try:
        report = wait_for_state(data_dir, "running")
        assert {"memory-consolidation", "memory-dream", "memory-embedder"} <= set(report["daemon"]["details"]["tasks"])
        # Until both timers have fired once (MEMORY.md may exist before the first dream: waiting for
        # the file stopped the daemon after 0.7 s on a busy machine, before either timer came).
        log = Path(_STDERR[proc.pid].name)
        events = ("memory.consolidated", "memory.dreamt")
        wait_for(lambda: all(event in log.read_text() for event in events), 60, "both timers to fire once")
    finally:
        code, _, err = stop(proc)
    assert code == 0, err
    assert "- Dentist moved to Tuesday" in memory_md.read_text()
    assert "memory.consolidated" in err and "memory.dreamt" in err


def test_a_busy_p2p_port_is_refused_with_the_fix(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__LISTEN=f'["/ip4/127.0.0.1/tcp/{port}"]')
        result = run_cli("run", "--data-dir", str(tmp_path / "d"), env=env)
    assert result.returncode == 2, result.stderr
    assert f"port {port} is in use" in result.stderr and "needs its own port" in result.stderr
    assert "Traceback" not in result.stderr
