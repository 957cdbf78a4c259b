"""Issue 48, in a real daemon: one part's loop that fails at runtime is restarted and counted; the
node goes on serving. The failure was first a real input (a transcript whose timestamp is JSON's
``Infinity``: the watcher raised OverflowError at every round, and the daemon stopped); that input is
now read as having no time (tests/memory/test_capture_formats.py), so the failure is asked for by a
failpoint (``ground.failpoints``): the watcher's loop fails at every run."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.daemons import Node, api_url, wait_for, watching_daemon

pytestmark = pytest.mark.slow  # a real daemon process


def _restarts(node: Node) -> dict[str, Any] | None:
    result = node.cli("status", "--json")
    if result.returncode != 0:
        return None
    restarts = json.loads(result.stdout)["daemon"].get("details", {}).get("restarts", {})
    return restarts.get("memory-capture-watch") if restarts else None


def _restart_counter(node: Node) -> float:
    """``bitterbot_task_restarts_total{task="memory-capture-watch"}`` in the daemon's /metrics."""
    url = wait_for(lambda: api_url(node), 60, "the API to listen", [node])
    request = urllib.request.Request(url + "/metrics")
    request.add_header("Authorization", f"Bearer {(node.data / 'api.token').read_text().strip()}")
    with urllib.request.urlopen(request, timeout=30) as response:
        lines = response.read().decode().splitlines()
    wanted = 'bitterbot_task_restarts_total{task="memory-capture-watch"}'
    return next(float(line.split()[-1]) for line in lines if line.startswith(wanted))


def test_a_capture_watcher_that_fails_is_restarted_and_counted_while_the_node_keeps_serving(tmp_path: Path) -> None:
    watched = tmp_path / "transcripts"
    watched.mkdir()
    (watched / "infinite.jsonl").write_text('{"text": "the rota changes on Monday", "timestamp": Infinity}\n')
    node = watching_daemon(tmp_path, watched, BITTERBOT_FAILPOINTS="task:memory-capture-watch")
    try:
        # Before the fix the daemon stopped (exit 1) at the watcher's first failure: no status answered.
        health = wait_for(lambda: (_restarts(node) or {}).get("restarts", 0) >= 2 and _restarts(node), 60,
                          "the capture watcher to be restarted twice", [node])  # fmt: skip
        assert "FailpointHit" in health["last_error"]
        assert node.proc is not None and node.proc.poll() is None, "the daemon stopped"
        status = node.cli("status")
        assert status.returncode == 0 and "restarted   memory-capture-watch" in status.stdout, status.stdout
        assert node.json("memory", "stats")["total"] == 0  # still serving commands
        assert _restart_counter(node) >= 2
    finally:
        log = node.stop()
    assert '"task.failed"' in log or "task.failed" in log, log[-2000:]
