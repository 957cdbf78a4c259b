"""`bitterbot-node doctor`: each first-hour problem found, with its fix; a healthy node passes."""

from __future__ import annotations

import email.utils
import http.server
import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env, run_cli

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)


@contextmanager
def time_server(skew_s: float, asked: list[str] | None = None) -> Iterator[str]:
    """A loopback HTTP server whose Date header is ``skew_s`` seconds off this machine's clock; each
    request's path is added to ``asked``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self) -> None:
            if asked is not None:
                asked.append(self.path)
            self.send_response(200)
            self.end_headers()

        def date_time_string(self, timestamp: float | None = None) -> str:
            return email.utils.formatdate(time.time() + skew_s, usegmt=True)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def doctor(data: Path, **env: str) -> tuple[int, dict[str, list[dict[str, str]]]]:
    result = run_cli("doctor", "--json", "--data-dir", str(data),
                     env=clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", **env), timeout=60)  # fmt: skip
    by_name: dict[str, list[dict[str, str]]] = {}
    for check in json.loads(result.stdout):
        by_name.setdefault(check["name"], []).append(check)
    return result.returncode, by_name


def test_a_fresh_node_is_healthy(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert run_cli("init", "--data-dir", str(data)).returncode == 0
    with time_server(0) as url:
        code, checks = doctor(data, BITTERBOT_DOCTOR__TIME_URL=url, BITTERBOT_DOCTOR__CLOCK_ONLINE="true")
    assert code == 0, checks
    for name in ("data dir", "identity key", "api token", "sqlite", "embedder", "chain", "clock", "disk"):
        assert checks[name][0]["status"] == "ok", checks[name]
    assert "sqlite-vec" in checks["sqlite"][0]["detail"] and "FTS5" in checks["sqlite"][0]["detail"]
    assert checks["bootstrap"][0]["status"] == "warn"  # no peers configured: said, not failed


def test_each_problem_is_found_with_its_fix(tmp_path: Path) -> None:
    data = tmp_path / "d"
    assert run_cli("init", "--data-dir", str(data)).returncode == 0
    os.chmod(data / "identity.key", 0o644)
    busy_port, closed_port, closed_chain = free_port(), free_port(), free_port()
    with socket.socket() as squatter, time_server(-600) as url:
        squatter.bind(("127.0.0.1", busy_port))
        squatter.listen()
        code, checks = doctor(
            data,
            BITTERBOT_DOCTOR__TIME_URL=url,
            BITTERBOT_DOCTOR__CLOCK_ONLINE="true",
            BITTERBOT_P2P__LISTEN=json.dumps([f"/ip4/127.0.0.1/tcp/{busy_port}"]),
            BITTERBOT_P2P__BOOTSTRAP=json.dumps([f"/ip4/127.0.0.1/tcp/{closed_port}/p2p/12D3KooWAbc"]),
            BITTERBOT_CHAIN__URL=f"http://127.0.0.1:{closed_chain}",
            BITTERBOT_CHAIN__TOKEN_ADDRESS="0x" + "11" * 20,
            BITTERBOT_CHAIN__ESCROW_ADDRESS="0x" + "22" * 20,
        )
    assert code == 1
    key = checks["identity key"][0]
    assert key["status"] == "fail" and key["fix"] == f"chmod 600 {data / 'identity.key'}"
    port = checks[f"p2p port {busy_port}"][0]
    assert port["status"] == "fail" and "in use" in port["detail"] and "another port" in port["fix"]
    clock = checks["clock"][0]
    assert clock["status"] == "fail" and "ahead of" in clock["detail"] and "timedatectl" in clock["fix"]
    boot = checks["bootstrap"][0]
    assert boot["status"] == "fail" and f"127.0.0.1:{closed_port} does not answer" in boot["detail"]
    chain = checks["chain"][0]
    assert chain["status"] == "fail" and "no chain answers" in chain["detail"] and "anvil" in chain["fix"]
    text = run_cli("doctor", "--data-dir", str(data), env=clean_env(BITTERBOT_DOCTOR__TIME_URL="")).stdout
    assert "FAIL  identity key" in text and "fix: chmod 600" in text


def test_the_clock_is_compared_with_an_outside_host_only_when_asked(tmp_path: Path) -> None:
    """Issue 48: `doctor` asked [doctor] time_url (pypi.org by default) every time it ran. By default
    it now asks only the system; `--clock-online` compares with the host."""
    data = tmp_path / "d"
    assert run_cli("init", "--data-dir", str(data)).returncode == 0
    asked: list[str] = []
    with time_server(-600, asked) as url:
        _, checks = doctor(data, BITTERBOT_DOCTOR__TIME_URL=url)
        assert asked == []  # before: the server was asked, and the clock failed as 600 s ahead
        assert url not in checks["clock"][0]["detail"]
        env = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_DOCTOR__TIME_URL=url)
        result = run_cli("doctor", "--json", "--clock-online", "--data-dir", str(data), env=env)
        assert asked == ["/"]
    clock = next(c for c in json.loads(result.stdout) if c["name"] == "clock")
    assert clock["status"] == "fail" and "ahead of" in clock["detail"]


def test_the_local_clock_check_says_what_the_system_reports() -> None:
    from node.ops.doctor import FAIL, OK, WARN, check_clock_locally

    assert check_clock_locally(True).status == OK
    unsynced = check_clock_locally(False)
    assert unsynced.status == WARN and "set-ntp" in unsynced.fix and "--clock-online" in unsynced.fix
    unknown = check_clock_locally(None)
    assert unknown.status == WARN and "--clock-online" in unknown.fix
    assert FAIL not in {check_clock_locally(s).status for s in (True, False, None)}  # never fails unasked


@pytest.mark.skipif(shutil.which("anvil") is None, reason="anvil is not installed")
def test_a_plaintext_wallet_holding_usdc_on_a_real_chain_is_a_warning(tmp_path: Path) -> None:
    """Issue 15, finding 5: in production the wallet holds real USDC; doctor says when it is not sealed."""
    import asyncio

    from marketplace.chain import Chain
    from marketplace.wallet import load_or_create_wallet
    from node.config import Config
    from node.ops.doctor import WARN, check_chain
    from tests.marketplace.conftest import ARBITER, anvil_process

    wallet = tmp_path / "wallet.key"
    account = load_or_create_wallet(wallet)
    with anvil_process() as url:

        async def deploy_and_fund() -> tuple[str, str]:
            chain = await Chain.rpc_dev(url, arbiter=ARBITER.address)
            try:
                await chain.fund(account.address, 5_000)
                return chain.token_address, chain.escrow_address
            finally:
                await chain.close()

        token, escrow = asyncio.run(deploy_and_fund())
        real = Config.model_validate({"chain": {"url": url, "token_address": token, "escrow_address": escrow}})
        checks = check_chain(real, wallet)
        assert [c.status for c in checks] == ["ok", WARN]
        assert "plaintext and holds 5000 micro-USDC" in checks[1].detail and "init --encrypt" in checks[1].fix
        dev = Config.model_validate({"chain": {"url": url, "token_address": token, "escrow_address": escrow,
                                               "dev": True}})  # fmt: skip
        assert [c.status for c in check_chain(dev, wallet)] == ["ok"]  # a development chain's play money
        load_or_create_wallet(wallet, b"passphrase")  # sealed now
        assert [c.status for c in check_chain(real, wallet)] == ["ok"]


def test_a_data_dir_that_cannot_be_a_folder_is_a_usage_error_for_every_command(tmp_path: Path) -> None:
    """Issue 32: an unusable data dir ended in a raw traceback with exit 1 (PermissionError,
    NotADirectoryError), and doctor said all was well."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    data = blocker / "data"
    for command in (["run"], ["doctor"], ["status"], ["memory", "count"]):
        result = run_cli(*command, "--data-dir", str(data))
        assert result.returncode == 2, (command, result.stderr)
        assert "cannot use the data dir" in result.stderr and "is a file, not a folder" in result.stderr
        assert "Traceback" not in result.stderr


def test_doctor_fails_a_data_dir_it_cannot_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission bits say nothing to root, so the check writes a file; here the OS's refusal is
    faked at that one call (a named fake: this machine runs tests as root)."""
    import tempfile as tempfile_module

    from node.ops.doctor import check_data_dir
    from node.paths import NodePaths, write_problem

    data = tmp_path / "d"
    data.mkdir(mode=0o700)
    assert write_problem(data) is None

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile_module, "mkstemp", refused)
    assert write_problem(data) == f"{data} is not writable (Permission denied)"
    from node.config import Config

    checks = check_data_dir(NodePaths.of(data, Config()))
    assert checks[0].status == "fail" and "not writable" in checks[0].detail and "--data-dir" in (checks[0].fix or "")
