"""The soak's daemon: a real `bitterbot-node run` on its own data dir, started, killed with SIGKILL
and started again; its resident memory and open descriptors read from /proc."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from bench.api import ApiClient, daemon_env
from bench.node.footprint import children_mb, resident_mb
from node.runtime.status import read_status

CLI = [sys.executable, "-m", "node"]
#: How long a start may take before the soak calls it failed (a loaded 2-core machine took ~10 s).
START_DEADLINE_S = 120


class DaemonFailed(RuntimeError):
    """The daemon did not come up again, or exited by itself: an invariant of the soak is broken."""


def soak_env(watched: Path, **settings: str) -> dict[str, str]:
    """The daemon's settings: capture watching ``watched`` every 0.5 s, P2P on loopback."""
    return daemon_env(
        BITTERBOT_CAPTURE__WATCH=json.dumps([str(watched)]),
        BITTERBOT_CAPTURE__POLL_S="0.5",
        BITTERBOT_P2P__LISTEN='["/ip4/127.0.0.1/tcp/0"]',
        BITTERBOT_LOG__LEVEL="info",
        **settings,
    )


class SoakDaemon:
    """One data dir's daemon, across its restarts. ``log`` collects every run's stderr."""

    def __init__(self, data: Path, env: dict[str, str], log: Path) -> None:
        self.data = data
        self.env = env
        self.log_path = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.url: str | None = None
        self.started_at = 0.0
        self.starts = 0
        self.lock = threading.Lock()  # the API url and the process, as the other threads see them
        self._log: IO[bytes] | None = None
        subprocess.run([*CLI, "init", "--data-dir", str(data)], env=env, check=True, capture_output=True)

    @property
    def db(self) -> Path:
        return self.data / "memory" / "crystals.db"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        if self._log is None:
            self._log = self.log_path.open("ab")
        proc = subprocess.Popen(
            [*CLI, "run", "--data-dir", str(self.data)], env=self.env, stdout=subprocess.DEVNULL, stderr=self._log
        )
        try:
            url = _wait_running(self.data, proc)
        except RuntimeError as exc:
            proc.kill()
            proc.wait()
            raise DaemonFailed(f"start {self.starts + 1} failed: {exc}; log ends: {self.log_tail()}") from None
        with self.lock:
            self.proc, self.url = proc, url
            self.started_at = time.monotonic()
            self.starts += 1

    def kill(self) -> None:
        """SIGKILL, as a power cut or the OOM killer would end it: nothing runs after it."""
        with self.lock:
            proc, self.proc, self.url = self.proc, None, None
        if proc is not None:
            if proc.poll() is not None:
                raise DaemonFailed(f"the daemon had exited by itself ({proc.returncode}): {self.log_tail()}")
            proc.send_signal(signal.SIGKILL)
            proc.wait()

    def stop(self) -> None:
        """SIGTERM and wait, as a service manager stops it; then the log is closed."""
        with self.lock:
            proc, self.proc, self.url = self.proc, None, None
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise DaemonFailed("the daemon did not stop within 60 s of SIGTERM") from None
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill_quietly(self) -> None:
        """SIGKILL whatever still runs, and close the log: the soak's last word, even after a failure."""
        with self.lock:
            proc, self.proc, self.url = self.proc, None, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def alive(self) -> bool:
        with self.lock:
            return self.proc is not None and self.proc.poll() is None

    def client(self) -> ApiClient | None:
        """A client of the daemon's API, or None while it is down."""
        with self.lock:
            url = self.url
        if url is None:
            return None
        return ApiClient(url, (self.data / "api.token").read_text().strip())

    def address(self) -> str | None:
        """Its P2P address with its peer id, or None while it is down."""
        status = read_status(self.data / "status.json")
        listen = status.details.get("p2p", {}).get("listen") if status is not None and self.alive() else None
        return str(listen[0]) if listen else None

    def sample(self) -> dict[str, Any] | None:
        """Resident memory (daemon plus its workers) and open descriptors, now; None while it is down."""
        with self.lock:
            proc = self.proc
        if proc is None:
            return None
        try:
            return {
                "uptime_s": round(time.monotonic() - self.started_at, 1),
                "rss_mb": round(resident_mb(proc.pid) + children_mb(proc.pid), 1),
                "fds": len(os.listdir(f"/proc/{proc.pid}/fd")),
            }
        except (FileNotFoundError, ProcessLookupError, RuntimeError):
            return None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-chars:].decode(errors="replace")
        except FileNotFoundError:
            return ""


def _wait_running(data: Path, proc: subprocess.Popen[bytes]) -> str:
    """The API url once this process (not the one killed before it, whose status file stays behind)
    reports itself running."""
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the daemon exited with {proc.returncode}")
        status = read_status(data / "status.json")
        if status is not None and status.pid == proc.pid and status.state == "running":
            url = status.details.get("api", {}).get("url")
            if url:
                return str(url)
        time.sleep(0.2)
    raise RuntimeError(f"the daemon did not report itself running within {START_DEADLINE_S} s")
