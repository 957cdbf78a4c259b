"""Real `bitterbot-node run` processes for tests: start, address, CLI calls, stop with their stderr."""

from __future__ import annotations

import json
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from node.runtime.status import probe_daemon
from tests.cli_zygote import Process
from tests.conftest import CLI, CLI_TIMEOUT_S, run_cli, start_cli


class Node:
    def __init__(self, root: Path, name: str, env: dict[str, str], *, inside: list[str] | None = None) -> None:
        """``inside``: a command prefix its daemon and CLI calls run under (a network namespace's)."""
        self.data = root / name
        self.env = env
        self.inside = inside or []
        self.proc: Process | None = None
        self._err: IO[str] | None = None

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        if self.inside:
            line = [*self.inside, *CLI, *args, "--data-dir", str(self.data)]
            return subprocess.run(line, env=self.env, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)  # fmt: skip
        return run_cli(*args, "--data-dir", str(self.data), env=self.env)

    def json(self, *args: str) -> Any:
        result = self.cli(*args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def start(self) -> None:
        self._err = tempfile.NamedTemporaryFile("w+")  # noqa: SIM115 - closed (and removed) in stop()
        if not self.inside:
            self.proc = start_cli("run", "--data-dir", str(self.data), env=self.env, stderr=Path(self._err.name))
            return
        self.proc = subprocess.Popen(
            [*self.inside, *CLI, "run", "--data-dir", str(self.data)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=self._err,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    def address(self) -> str:
        report = wait_for(lambda: listening(self), 60, f"{self.data.name} to listen")
        return str(report)

    def log_tail(self, lines: int) -> list[str]:
        """The last lines the node wrote to stderr so far."""
        if self._err is None:
            return []
        self._err.flush()
        self._err.seek(0)
        return self._err.read().splitlines()[-lines:]

    def stop(self) -> str:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                tail = "\n".join(self.log_tail(40))
                raise AssertionError(f"{self.data.name} did not stop within 15 s; its log ends:\n{tail}") from None
            finally:
                self.proc.kill()
        log = ""
        if self._err is not None:
            self._err.seek(0)
            log = self._err.read()
            self._err.close()
        return log


def management_node(root: Path, env: dict[str, str]) -> tuple[Node, dict[str, str]]:
    """An initialised management node (not started) that trusts its own key, and the setting that
    makes other nodes trust it (``BITTERBOT_TRUST__MANAGEMENT_KEYS``)."""
    manager = Node(root, "manager", {**env, "BITTERBOT_NODE__ROLE": "management"})
    assert manager.cli("init").returncode == 0
    trust = {"BITTERBOT_TRUST__MANAGEMENT_KEYS": json.dumps([manager.json("status")["identity"]["public_key"]])}
    manager.env.update(trust)
    return manager, trust


def running_details(node: Node) -> dict[str, Any] | None:
    """What a running daemon last reported of its parts: the status file and lock that `status --json`
    reads, read here. Waiting on a daemon polls this every 0.3 s, and a CLI process per poll cost
    about 0.4 s of a core each while the daemon itself was starting."""
    probe = probe_daemon(node.data)
    if not probe.running or probe.status is None or probe.status.state != "running":
        return None
    return probe.status.details


def listening(node: Node) -> str | None:
    listen = (running_details(node) or {}).get("p2p", {}).get("listen")
    return str(listen[0]) if listen else None


def api_url(node: Node) -> str | None:
    """The running daemon's API address, once it listens."""
    return str((running_details(node) or {}).get("api", {}).get("url") or "") or None


def wait_for(check: Callable[[], Any], timeout: float, what: str, nodes: list[Node] | None = None) -> Any:
    """``check()`` once it is truthy. The pause between checks grows (0.2 s, x1.5, at most 1.5 s): many
    checks start a CLI process, about 0.3 s of a core each, and a check every 0.3 s kept a core busy
    for as long as the daemons it waited on needed that core."""
    deadline = time.monotonic() + timeout
    pause = 0.2
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(pause)
        pause = min(pause * 1.5, 1.5)
    raise AssertionError(f"timed out waiting for {what}" + "".join(diagnosis(n) for n in nodes or []))


def diagnosis(node: Node) -> str:
    """What a node says about its network, and the end of its log, for a failure message."""
    result = node.cli("status", "--json")
    p2p = json.loads(result.stdout)["daemon"].get("details", {}).get("p2p", {}) if result.returncode == 0 else {}
    line = f"\n{node.data.name}: peers {p2p.get('peers')} messages {p2p.get('messages')} ingested {p2p.get('ingested')}"
    if not p2p:  # the node is gone or mute: say why, from its status answer
        alive = node.proc is not None and node.proc.poll() is None
        line += f"\n  status exit {result.returncode}: {result.stderr.strip()[-300:]}; process alive: {alive}"
    return line + "\n  log tail:\n    " + "\n    ".join(node.log_tail(15))


def watching_daemon(root: Path, folder: Path, **env: str) -> Node:
    """A started daemon (hashing embedder) capturing ``folder`` every 0.5 s; ``env`` adds variables."""
    from tests.conftest import clean_env

    node = Node(root, "node", clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_CAPTURE__WATCH=json.dumps(
        [str(folder)]), BITTERBOT_CAPTURE__POLL_S="0.5", **env))  # fmt: skip
    assert node.cli("init").returncode == 0
    node.start()
    return node
