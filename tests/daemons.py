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

from tests.conftest import CLI, run_cli


class Node:
    def __init__(self, root: Path, name: str, env: dict[str, str]) -> None:
        self.data = root / name
        self.env = env
        self.proc: subprocess.Popen[str] | None = None
        self._err: IO[str] | None = None

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, "--data-dir", str(self.data), env=self.env)

    def json(self, *args: str) -> Any:
        result = self.cli(*args, "--json")
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def start(self) -> None:
        self._err = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*CLI, "run", "--data-dir", str(self.data)],
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


def listening(node: Node) -> str | None:
    result = node.cli("status", "--json")
    if result.returncode != 0:
        return None
    daemon = json.loads(result.stdout)["daemon"]
    listen = daemon.get("details", {}).get("p2p", {}).get("listen") if daemon.get("state") == "running" else None
    return listen[0] if listen else None


def wait_for(check: Callable[[], Any], timeout: float, what: str, nodes: list[Node] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}" + "".join(diagnosis(n) for n in nodes or []))


def diagnosis(node: Node) -> str:
    """What a node says about its network, for a failure message."""
    result = node.cli("status", "--json")
    p2p = json.loads(result.stdout)["daemon"].get("details", {}).get("p2p", {}) if result.returncode == 0 else {}
    line = f"\n{node.data.name}: peers {p2p.get('peers')} messages {p2p.get('messages')} ingested {p2p.get('ingested')}"
    if not p2p:  # the node is gone or mute: say why, from its status answer and its own log
        alive = node.proc is not None and node.proc.poll() is None
        line += f"\n  status exit {result.returncode}: {result.stderr.strip()[-300:]}; process alive: {alive}"
        line += "\n  log tail:\n    " + "\n    ".join(node.log_tail(15))
    return line
