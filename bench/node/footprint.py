"""What an idle node costs (issue 31): resident memory of a real `bitterbot-node run` with the
default embedder (MiniLM) and P2P on, and the wall time of a CLI call answered by it.

Two daemons in the same run, on their own fresh data dirs:
- as shipped: the model runs in a worker process started when a text first needs it and let go
  after ``[memory] embedder_idle_s`` (2 s here instead of 300, so the run is short);
- baseline: ``embedder_idle_s = 0``, the worker kept once started, as the model was kept before.

Resident memory (VmRSS) of the daemon and of its worker, and their sum, is read after the daemon
has been idle, after a memory is added and searched, and once the shipped daemon has let the
worker go; beside it, each one's own memory (RssAnon: not the file pages the system can take back
under pressure, which is what a small machine's limit is spent on) and the worker's peak.

The CLI round trip is ``memory search`` answered by the daemon through the thin entry point
(``node.cli.thin``), beside the same line run by the full CLI and the interpreter starting and
doing nothing (``python -c pass``), interleaved call by call. Goals: idle <= 150 MB, CLI <= 150 ms.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.api import daemon_env, stop_daemon, wait_for_api
from bench.timing import percentiles_ms

CLI = [sys.executable, "-m", "node"]
FULL_CLI = [sys.executable, "-c", "from node.cli.main import main; main()"]  # the CLI without its thin entry
GOAL_IDLE_MB = 150
GOAL_CLI_MS = 150
IDLE_S = 2.0


def resident_mb(pid: int, field: str = "VmRSS") -> float:
    """``VmRSS``: resident, file pages included; ``RssAnon``: the process's own memory, which the
    system cannot drop under pressure; ``VmHWM``: the most it was resident."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no {field} for process {pid}")


def children_mb(pid: int, field: str = "VmRSS") -> float:
    """``field`` of the daemon's child processes (its embedding worker), summed."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                total += resident_mb(int(child), field)
            except (FileNotFoundError, RuntimeError):  # it exited between the two reads
                continue
    return round(total, 1)


def _resident(pid: int) -> dict[str, float]:
    daemon, workers = resident_mb(pid), children_mb(pid)
    own_daemon, own_workers = resident_mb(pid, "RssAnon"), children_mb(pid, "RssAnon")
    return {
        "daemon_mb": daemon,
        "worker_mb": workers,
        "total_mb": round(daemon + workers, 1),
        "own_daemon_mb": own_daemon,
        "own_worker_mb": own_workers,
        "own_total_mb": round(own_daemon + own_workers, 1),
        "worker_peak_mb": children_mb(pid, "VmHWM"),
    }


def _daemon(root: Path, name: str, settings: dict[str, str]) -> tuple[Path, dict[str, str], subprocess.Popen[bytes]]:
    data = root / name
    env = daemon_env(BITTERBOT_MEMORY__EMBEDDER="minilm", BITTERBOT_P2P__LISTEN='["/ip4/127.0.0.1/tcp/0"]', **settings)
    subprocess.run([*CLI, "init", "--data-dir", str(data)], env=env, check=True, capture_output=True)
    proc = subprocess.Popen(
        [*CLI, "run", "--data-dir", str(data)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for_api(data, proc)
    return data, env, proc


def _cli(data: Path, env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    subprocess.run([*CLI, *args, "--data-dir", str(data)], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def _use(data: Path, env: dict[str, str]) -> None:
    _cli(data, env, "memory", "add", "The staging database lives on db2")
    _cli(data, env, "memory", "search", "where does the staging database live")


def _released(data: Path, env: dict[str, str]) -> bool:
    result = subprocess.run([*CLI, "status", "--json", "--data-dir", str(data)], env=env, capture_output=True)
    return b'"model_loaded": false' in result.stdout


def run(quick: bool) -> dict[str, Any]:
    idle_wait = 3.0 if quick else 10.0
    calls = 5 if quick else 20
    with tempfile.TemporaryDirectory(prefix="bench-footprint-") as tmp:
        root = Path(tmp)
        data, env, proc = _daemon(root, "shipped", {"BITTERBOT_MEMORY__EMBEDDER_IDLE_S": str(IDLE_S)})
        base_data, base_env, base_proc = _daemon(root, "held", {"BITTERBOT_MEMORY__EMBEDDER_IDLE_S": "0"})
        try:
            time.sleep(idle_wait)
            shipped: dict[str, Any] = {"idle": _resident(proc.pid)}
            baseline: dict[str, Any] = {"idle": _resident(base_proc.pid)}
            _use(data, env)
            shipped["in_use"] = _resident(proc.pid)
            _use(base_data, base_env)
            baseline["in_use"] = _resident(base_proc.pid)
            deadline = time.monotonic() + 60
            while not _released(data, env) and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(idle_wait)
            shipped["idle_after_use"] = _resident(proc.pid)
            baseline["idle_after_use"] = _resident(base_proc.pid)
            floor, thin, full = [], [], []
            search = ["memory", "search", "staging database", "--data-dir", str(data)]
            for _ in range(calls):  # interleaved, so a busy moment weighs on all three alike
                floor.append(_timed([sys.executable, "-c", "pass"], env))
                thin.append(_timed([*CLI, *search], env))
                full.append(_timed([*FULL_CLI, *search], env))
        finally:
            stop_daemon(proc)
            stop_daemon(base_proc)
    return {
        "embedder": "minilm",
        "idle_s_setting": IDLE_S,
        "shipped": shipped,
        "baseline_model_kept": baseline,
        "goal_idle_mb": GOAL_IDLE_MB,
        "idle_goal_met": max(shipped["idle"]["total_mb"], shipped["idle_after_use"]["total_mb"]) <= GOAL_IDLE_MB,
        "cli": {
            "baseline_interpreter_only": percentiles_ms(floor),
            "baseline_full_cli_search": percentiles_ms(full),
            "search_answered_by_daemon": percentiles_ms(thin),
            "goal_ms": GOAL_CLI_MS,
            "goal_met": percentiles_ms(thin)["p50_ms"] <= GOAL_CLI_MS,
        },
    }


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    return time.perf_counter() - started
