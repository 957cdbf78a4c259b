"""A memory search through a running daemon's local API and through the CLI, beside the same
search called in-process on the same memory file.

A real `bitterbot-node run` (P2P off, hashing embedder) serves a memory file of 5,000
crystals (1,000 with --quick). Timed in the same run, interleaved query by query:
- baseline: ``memory.service.recall.search`` on the file, opened by this process;
- api: ``POST /v1/memory/search`` on one kept-alive HTTP connection, token and JSON included
  (what an agent beside the node pays);
- cli: ``bitterbot-node memory search Q --json`` as a subprocess (what a script pays), beside
  the interpreter starting and importing the CLI without doing anything (its floor).
No goal is set; the figures to watch are what the API adds to the search, and what the CLI
adds to its own start-up.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.memory_store import synthetic_texts
from bench.timing import percentiles_ms
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.service import recall
from memory.service.requests import SearchArgs
from memory.setup.cycles import search_weights
from node.config_loading import load_config
from node.parts.memory import open_node_store
from node.paths import NodePaths
from node.runtime.status import read_status

SIZE = 5_000
QUICK_SIZE = 1_000
QUERIES = 200
QUICK_QUERIES = 40
CLI_RUNS = 20
CLI = [sys.executable, "-m", "node"]


def daemon_env(**settings: str) -> dict[str, str]:
    """This process's environment without BITTERBOT_* settings, plus a benchmark daemon's: the hashing
    embedder, any free API port, warnings only; then ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BITTERBOT_")}
    env.update(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_API__PORT="0", BITTERBOT_LOG__LEVEL="warning")
    env.update(settings)
    return env


async def _fill(data: Path, env: dict[str, str], size: int) -> list[str]:
    loaded = load_config(None, env)
    paths = NodePaths.of(data, loaded.config)
    paths.ensure_data_dir()
    store = await open_node_store(loaded.config, paths)
    try:
        texts = synthetic_texts(size, random.Random(7))
        await store.remember_many([NewCrystal(t) for t in texts])
        await store.embed_backlog(batch_size=1000)
    finally:
        await store.close()
    rng = random.Random(11)
    return [" ".join(rng.choice(t.split()[2:]) for _ in range(2)) for t in rng.sample(texts, 50)]


def wait_for_api(data: Path, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the daemon exited with {proc.returncode}")
        status = read_status(data / "status.json")
        if status is not None and status.state == "running" and status.details.get("api", {}).get("url"):
            return str(status.details["api"]["url"])
        time.sleep(0.2)
    raise RuntimeError("the daemon's API did not come up in 90 s")


def stop_daemon(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as a user's service manager would; killed only if it has not stopped in 30 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


class ApiClient:
    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self._conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=30)
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, doc: dict[str, Any] | None = None) -> Any:
        self._conn.request(method, path, None if doc is None else json.dumps(doc), self._headers)
        response = self._conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"API answered {response.status}: {body[:200]!r}")
        return json.loads(body)

    def search(self, query: str) -> list[Any]:
        hits: list[Any] = self.call("POST", "/v1/memory/search", {"query": query, "limit": 10})
        return hits

    def close(self) -> None:
        self._conn.close()


async def _measure(data: Path, env: dict[str, str], url: str, queries: list[str], rounds: int) -> dict[str, Any]:
    loaded = load_config(None, env)
    store: IntakeStore = await open_node_store(loaded.config, NodePaths.of(data, loaded.config))
    weights = search_weights(loaded.config.memory)
    client = ApiClient(url, (data / "api.token").read_text().strip())
    direct: list[float] = []
    through_api: list[float] = []
    hits_direct = hits_api = 0
    try:
        for i in range(rounds):
            query = queries[i % len(queries)]
            started = time.perf_counter()
            found = await recall.search(store, SearchArgs(query=query, limit=10), weights)
            direct.append(time.perf_counter() - started)
            hits_direct += len(found)
            started = time.perf_counter()
            hits_api += len(await asyncio.to_thread(client.search, query))
            through_api.append(time.perf_counter() - started)
    finally:
        client.close()
        await store.close()
    base, api = percentiles_ms(direct), percentiles_ms(through_api)
    return {
        "baseline_in_process_search": base,
        "api_search": api,
        "api_over_baseline_p50": round(api["p50_ms"] / base["p50_ms"], 2),
        "api_added_p50_ms": round(api["p50_ms"] - base["p50_ms"], 3),
        "hits_per_query": {"in_process": round(hits_direct / rounds, 2), "api": round(hits_api / rounds, 2)},
    }


def _cli_times(data: Path, env: dict[str, str], queries: list[str]) -> dict[str, Any]:
    floor: list[float] = []
    cli: list[float] = []
    for i in range(CLI_RUNS):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "from node.cli.main import register_commands; register_commands()"],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        floor.append(time.perf_counter() - started)
        started = time.perf_counter()
        result = subprocess.run(
            [*CLI, "memory", "search", queries[i], "--json", "--data-dir", str(data)],
            env=env, check=True, capture_output=True,
        )  # fmt: skip
        cli.append(time.perf_counter() - started)
        json.loads(result.stdout)
    base, measured = percentiles_ms(floor), percentiles_ms(cli)
    return {
        "baseline_interpreter_and_imports": base,
        "cli_search_through_daemon": measured,
        "cli_added_p50_ms": round(measured["p50_ms"] - base["p50_ms"], 1),
    }


def run(quick: bool) -> dict[str, Any]:
    size = QUICK_SIZE if quick else SIZE
    rounds = QUICK_QUERIES if quick else QUERIES
    env = daemon_env(BITTERBOT_P2P__ENABLED="false")
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        data = Path(tmp) / "node"
        queries = asyncio.run(_fill(data, env, size))
        subprocess.run([*CLI, "init", "--data-dir", str(data)], env=env, check=True, capture_output=True)
        proc = subprocess.Popen(
            [*CLI, "run", "--data-dir", str(data)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            url = wait_for_api(data, proc)
            result = asyncio.run(_measure(data, env, url, queries, rounds))
            result["cli"] = _cli_times(data, env, queries)
        finally:
            stop_daemon(proc)
    return {"crystals": size, "queries": rounds, "mode": "hybrid", **result}
