"""Issue 48, in a real daemon: a part that fails mid-work is restarted and counted, what it was doing
is retried and not done twice, and the person sees it all where they look: `status` (text and
--json), /metrics and the dashboard (restarts with their last error and when; damaged lines skipped
with the last file and line)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.daemons import Node, api_url, running_details, wait_for, watching_daemon
from tests.node.dashboard.test_security import Browser
from tests.node.test_capture_daemon import SESSION, claude_line

pytestmark = pytest.mark.slow  # a real daemon process

TASK = "memory-capture-watch"


def _metrics(node: Node) -> dict[str, float]:
    url = wait_for(lambda: api_url(node), 60, "the API to listen", [node])
    request = urllib.request.Request(url + "/metrics")
    request.add_header("Authorization", f"Bearer {(node.data / 'api.token').read_text().strip()}")
    with urllib.request.urlopen(request, timeout=30) as response:
        lines = response.read().decode().splitlines()
    return {line.split()[0]: float(line.split()[1]) for line in lines if line and not line.startswith("#")}


def _settled(node: Node) -> dict[str, Any] | None:
    """The daemon's details once the watcher was restarted and has captured the file since."""
    details = running_details(node) or {}
    capture = details.get("memory", {}).get("capture") or {}
    restarted = details.get("restarts", {}).get(TASK, {}).get("restarts", 0) >= 1
    return details if restarted and capture.get("messages") == 2 else None


def test_a_watcher_failing_mid_round_is_restarted_counted_and_shown_and_captures_once(tmp_path: Path) -> None:
    """The watcher fails (failpoint ``capture:before-mark``, once) after storing a file's messages and
    before saving its watermark: the restarted round reads the same lines again and stores nothing
    twice. The damaged line among them is counted once."""
    watched = tmp_path / "claude" / "projects"
    watched.mkdir(parents=True)
    transcript = watched / f"{SESSION}.jsonl"
    transcript.write_text(
        claude_line("q1", "user", "The shop's Stripe webhook secret rotates on the 1st.")
        + "{ a line a crash cut\n"
        + claude_line("q2", "user", "Orders ship from the Valencia warehouse, dock B.")
    )
    node = watching_daemon(tmp_path, watched, BITTERBOT_FAILPOINTS="capture:before-mark=1")
    try:
        details = wait_for(lambda: _settled(node), 90, "the watcher to be restarted and capture", [node])
        health = details["restarts"][TASK]
        assert health["restarts"] == 1 and "FailpointHit" in health["last_error"] and health["last_failed_ms"] > 0
        capture = details["memory"]["capture"]
        assert capture["skipped_lines"] == 1
        assert capture["recent_skipped"] == [{"file": str(transcript), "line": 2}]
        # Stored once though read twice: the retried round found both messages captured.
        texts = [c["text"] for c in node.json("memory", "list")["crystals"]]
        for fact in ("Stripe webhook", "Valencia warehouse"):
            assert len([t for t in texts if fact in t]) == 1, texts
        status = node.cli("status").stdout
        assert f"1 damaged lines skipped, last {transcript}:2" in status, status
        assert f"restarted   {TASK} 1x" in status, status
        metrics = _metrics(node)
        assert metrics["bitterbot_capture_lines_skipped_total"] == 1.0
        assert metrics[f'bitterbot_task_restarts_total{{task="{TASK}"}}'] == 1.0
        browser = Browser(wait_for(lambda: api_url(node), 60, "the API", [node]))
        assert browser.login(str(node.json("ui")["url"])).status in (200, 303)
        live = json.loads(browser.request("GET", "/ui/live/overview").body)
        assert live["restarts"][TASK]["restarts"] == 1 and live["restarts"][TASK]["last_failed_ms"] > 0
        assert live["capture"]["skipped_lines"] == 1
        page = browser.request("GET", "/ui/").body
        restarts_table = page.split("Parts restarted after a failure", 1)[1].split("</table>", 1)[0]
        assert TASK in restarts_table and "FailpointHit" in restarts_table, restarts_table
        assert "damaged lines skipped" in page and f"{transcript}:2" in page
    finally:
        log = node.stop()
    assert log.count("capture.line_skipped") == 2  # met in the failed round and in the retried one
