"""What a stranger's floods cost a node, and whether its weather still arrives ("bounded per
connection", issue 31): `python -m bench connection_flood [--quick]`.

Real processes: a management node and a target (`bitterbot-node run`, the target bootstrapping from
the manager). Three phases, each with a fresh weather broadcast by the manager, timed from the
broadcast's return to the target obeying it (polled over its API every 20 ms):
- quiet: nothing else (the baseline);
- connections: a stranger holds 1,000 TCP connections from 127.0.0.2 that never finish a handshake;
- streams: a stranger, under a fresh key, opens 10,000 yamux streams of 4 KB on one connection.
During each it also records the target's most descriptors and resident memory, and whether a new
honest node (127.0.0.1) can connect to it and how long that takes.

The whole is run twice in the same run: with the node's bounds (the defaults of `[p2p]`), and with
py-libp2p 0.8.1's own numbers, which the node used before (1,000 connections, 250 inbound, 10,000
streams, no per-IP or per-peer bound): the baseline. --quick: 300 connections and 2,000 streams.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.api import ApiClient, daemon_env, stop_daemon, wait_for_api
from bench.network.connection_flood import Flood
from node.runtime.status import read_status

CLI = [sys.executable, "-m", "node"]
CONNECTIONS, STREAMS = 1_000, 10_000
QUICK_CONNECTIONS, QUICK_STREAMS = 300, 2_000
#: py-libp2p 0.8.1's defaults, as the node ran before it set its own bounds.
LIBRARY_DEFAULTS = {
    "BITTERBOT_P2P__MAX_CONNECTIONS": "1000",
    "BITTERBOT_P2P__MAX_INBOUND_CONNECTIONS": "250",
    "BITTERBOT_P2P__CONNECTIONS_PER_IP": "100000",
    "BITTERBOT_P2P__CONNECTIONS_PER_PEER": "3",
    "BITTERBOT_P2P__MAX_STREAMS": "10000",
    "BITTERBOT_P2P__STREAMS_PER_PEER": "100000",
    "BITTERBOT_P2P__STREAM_OPENS_PER_PEER_PER_S": "100000",
}
DEADLINE_S = 60


class Daemon:
    def __init__(self, root: Path, name: str, env: dict[str, str]) -> None:
        self.data = root / name
        self.env = env
        subprocess.run([*CLI, "init", "--data-dir", str(self.data)], env=env, check=True, capture_output=True)
        self.identity = json.loads(self._cli("status", "--json"))["identity"]
        self.proc: subprocess.Popen[bytes] | None = None
        self.api: ApiClient | None = None

    def _cli(self, *args: str) -> str:
        done = subprocess.run([*CLI, *args, "--data-dir", str(self.data)], env=self.env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()[-300:]}")
        return done.stdout

    def start(self) -> None:
        self.proc = subprocess.Popen([*CLI, "run", "--data-dir", str(self.data)], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        url = wait_for_api(self.data, self.proc)
        self.api = ApiClient(url, (self.data / "owner.token").read_text().strip())

    def p2p(self) -> dict[str, Any]:
        status = read_status(self.data / "status.json")
        details: dict[str, Any] = status.details.get("p2p", {}) if status is not None else {}
        return details

    def connected(self) -> set[str]:
        assert self.api is not None
        return {row["peer_id"] for row in self.api.call("GET", "/v1/peers") if row.get("connected")}

    def stop(self) -> None:
        if self.proc is not None:
            stop_daemon(self.proc)


def _until(check: Any, what: str, usage: Usage | None = None, pause: float = 0.02, within: float = DEADLINE_S) -> float:
    """Seconds until ``check()`` is true, sampling ``usage`` meanwhile."""
    started = time.perf_counter()
    while time.perf_counter() - started < within:
        if usage is not None:
            usage.sample()
        if check():
            return time.perf_counter() - started
        time.sleep(pause)
    raise RuntimeError(f"timed out waiting for {what}")


class Usage:
    """The most descriptors and resident memory a process was seen holding."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fds = self.rss_kb = 0

    def sample(self) -> None:
        self.fds = max(self.fds, len(os.listdir(f"/proc/{self.pid}/fd")))
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                self.rss_kb = max(self.rss_kb, int(line.split()[1]))


def _obeys(target: Daemon, reason: str) -> bool:
    assert target.api is not None
    weather = target.api.call("GET", "/v1/weather")
    return bool(weather.get("active")) and weather.get("reason") == reason


def _broadcast(manager: Daemon, reason: str) -> None:
    assert manager.api is not None
    manager.api.call("POST", "/v1/weather", {"level": 0.9, "duration_s": 600, "reason": reason})


def _weather_s(manager: Daemon, target: Daemon, reason: str, usage: Usage) -> float:
    _broadcast(manager, reason)
    return _until(lambda: _obeys(target, reason), f"the weather {reason!r}", usage)


def _mesh_formed(manager: Daemon, target: Daemon) -> None:
    """Until the target is in the manager's weather mesh, a broadcast may reach nobody: one is sent
    every 3 s until the target obeys one."""
    for attempt in range(DEADLINE_S // 3):
        _broadcast(manager, f"warm-up {attempt}")
        try:
            _until(lambda attempt=attempt: _obeys(target, f"warm-up {attempt}"), "warm-up", pause=0.1, within=3)
            return
        except RuntimeError:
            continue
    raise RuntimeError("the target never obeyed the manager's weather")


def _newcomer_s(root: Path, name: str, env: dict[str, str], target: Daemon, address: str, usage: Usage) -> Any:
    """Seconds until a new honest node bootstrapping from the target is connected to it; None if not
    within the deadline."""
    newcomer = Daemon(root, name, {**env, "BITTERBOT_P2P__BOOTSTRAP": json.dumps([address])})
    newcomer.start()
    try:
        return round(_until(lambda: newcomer.identity["peer_id"] in target.connected(), name, usage, 0.1), 2)
    except RuntimeError:
        return None
    finally:
        newcomer.stop()


@contextmanager
def _pair(root: Path, settings: dict[str, str]) -> Iterator[tuple[Daemon, Daemon, str]]:
    env = daemon_env(BITTERBOT_P2P__LISTEN='["/ip4/127.0.0.1/tcp/0"]', BITTERBOT_P2P__TARGET_PEERS="0", **settings)
    manager = Daemon(root, "manager", {**env, "BITTERBOT_NODE__ROLE": "management"})
    trust = {"BITTERBOT_TRUST__MANAGEMENT_KEYS": json.dumps([manager.identity["public_key"]])}
    manager.env.update(trust)
    manager.start()
    target: Daemon | None = None
    try:
        manager_address = manager.p2p()["listen"][0]
        target = Daemon(root, "target", {**env, **trust, "BITTERBOT_P2P__BOOTSTRAP": json.dumps([manager_address])})
        target.start()
        _until(lambda: manager.identity["peer_id"] in target.connected(), "the target to reach its manager")
        _mesh_formed(manager, target)
        yield manager, target, target.p2p()["listen"][0]
    finally:
        if target is not None:
            target.stop()
        manager.stop()


def _case(settings: dict[str, str], connections: int, streams: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-conn-flood-") as tmp, _pair(Path(tmp), settings) as pair:
        manager, target, address = pair
        assert target.proc is not None
        env = {k: v for k, v in target.env.items() if k != "BITTERBOT_P2P__BOOTSTRAP"}
        floods = {
            "quiet": [],
            "connections": ["--connections", str(connections), "--source", "127.0.0.2"],
            "streams": ["--streams", str(streams), "--write", "4096"],
        }
        for phase, args in floods.items():
            usage = Usage(target.proc.pid)
            usage.sample()
            before_fds, before_rss = usage.fds, usage.rss_kb
            flood = Flood(address, *args) if args else None
            try:
                weather_s = _weather_s(manager, target, f"drill {phase}", usage)
                newcomer_s = _newcomer_s(Path(tmp), f"newcomer-{phase}", env, target, address, usage)
            finally:
                ended = flood.end() if flood is not None else {}
            limits = target.p2p().get("limits", {})
            out[phase] = {
                "weather_s": round(weather_s, 3),
                "newcomer_connected_after_start_s": newcomer_s,
                "peak_fds": usage.fds,
                "fds_before": before_fds,
                "rss_growth_mb": round((usage.rss_kb - before_rss) / 1024, 1),
                "flood": {**(flood.opened if flood is not None else {}), **ended},
                "refused_so_far": limits.get("refused", {}),
            }
    return out


def run(quick: bool) -> dict[str, Any]:
    connections, streams = (QUICK_CONNECTIONS, QUICK_STREAMS) if quick else (CONNECTIONS, STREAMS)
    return {
        "connections": connections,
        "streams": streams,
        "bounded": _case({}, connections, streams),
        "baseline_library_defaults": _case(LIBRARY_DEFAULTS, connections, streams),
    }


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=2))
