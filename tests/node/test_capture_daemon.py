"""Continuous capture in a running daemon (issue 30): a transcript written into a watched folder is
captured as it grows, searchable and linked back to its messages, and its progress is in `status`;
an unreadable file is reported there once."""

from __future__ import annotations

import json
import urllib.request
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import clean_env
from tests.daemons import Node, api_url, running_details, wait_for

pytestmark = pytest.mark.slow  # a real daemon process

SESSION = "0b7f3c1d-2222-4e4e-8f8f-001122334455"


def claude_line(uuid: str, role: str, text: str) -> str:
    return json.dumps({"type": role, "sessionId": SESSION, "uuid": uuid, "timestamp": "2026-06-01T08:00:00Z",
                       "message": {"role": role, "content": text}}) + "\n"  # fmt: skip


def _holds(node: Node, messages: int) -> bool:
    return _capture(node).get("messages") == messages


def _capture(node: Node) -> dict[str, object]:
    return dict((running_details(node) or {}).get("memory", {}).get("capture") or {})


def _capture_gauges(node: Node, url: str | None) -> dict[str, float] | None:
    """The capture gauges of the daemon's /metrics, once they count what status counts."""
    if url is None:
        return None
    request = urllib.request.Request(url + "/metrics")
    request.add_header("Authorization", f"Bearer {(node.data / 'api.token').read_text().strip()}")
    with urllib.request.urlopen(request, timeout=30) as response:
        lines = response.read().decode().splitlines()
    gauges = {
        line.split()[0].removeprefix("bitterbot_capture_"): float(line.split()[1])
        for line in lines
        if line.startswith("bitterbot_capture_") and "lines_skipped" not in line  # a counter, not a gauge
    }
    return gauges if gauges.get("messages") == 3.0 and gauges.get("unreadable") == 1.0 else None


def _watching(tmp_path: Path, transcript: Path, text: str) -> Node:
    """A started daemon watching ``tmp_path/claude/projects``, where ``transcript`` (a file under it)
    holds ``text``."""
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text(text)
    env = clean_env(
        BITTERBOT_MEMORY__EMBEDDER="hashing",
        BITTERBOT_CAPTURE__WATCH=json.dumps([str(tmp_path / "claude" / "projects")]),
        BITTERBOT_CAPTURE__POLL_S="0.5",
    )
    node = Node(tmp_path, "node", env)
    assert node.cli("init").returncode == 0
    node.start()
    return node


def test_a_watched_transcript_is_captured_as_it_grows(tmp_path: Path) -> None:
    transcript = tmp_path / "claude" / "projects" / "shop" / f"{SESSION}.jsonl"
    node = _watching(
        tmp_path, transcript, claude_line("q1", "user", "The shop's Stripe webhook secret rotates on the 1st.")
    )
    try:
        wait_for(lambda: _capture(node).get("messages") == 1, 60, "the first message to be captured", [node])
        with transcript.open("a") as handle:
            handle.write(claude_line("a1", "assistant", "Noted: rotation is monthly, on the first."))
            handle.write(claude_line("q2", "user", "Orders ship from the Valencia warehouse, dock B."))
        (tmp_path / "claude" / "projects" / "notes.json").write_text("{ not json")
        wait_for(lambda: _capture(node).get("messages") == 3, 60, "the new messages to be captured", [node])
        errors = wait_for(lambda: _capture(node).get("errors"), 60, "the unreadable file in status", [node])
        assert list(errors) == [str(tmp_path / "claude" / "projects" / "notes.json")]
        hits = node.json("memory", "search", "Valencia warehouse", "--mode", "keyword")
        assert "dock B" in hits[0]["crystal"]["text"]
        shown = node.json("memory", "show", hits[0]["crystal"]["id"])
        # the person's statement is a piece of its own; the assistant's note before it is its context
        # (memory.capture.extract: the person's words never share a crystal with anyone else's)
        assert shown["captured_from"] == [{"session": SESSION, "messages": ["q2"]}]
        assert shown["crystal"]["context"] == "assistant: Noted: rotation is monthly, on the first."
        assert "capturing 2 transcripts (3 messages, 1 unreadable)" in node.cli("status").stdout
        gauges = wait_for(lambda: _capture_gauges(node, api_url(node)), 60, "the capture gauges in /metrics", [node])
        assert gauges == {"files": 2.0, "messages": 3.0, "unreadable": 1.0}
    finally:
        log = node.stop()
    assert "Traceback" not in log, log
    assert log.count("memory.capture_unreadable") == 1  # reported once, not every round


def test_a_watched_session_speaks_for_the_person_only_in_the_persons_own_turns(tmp_path: Path) -> None:
    """Issue 47: a Claude Code session holding a page the assistant quoted, a prompt the agent wrote
    to a sub-agent, shell output and command wrappers, beside the person's own turns. Only the
    person's turns are stored as theirs; the quote is held; nothing of it tops the bootstrap."""
    from tests.memory.test_capture_formats import SESSION_LINES

    node = _watching(tmp_path, tmp_path / "claude" / "projects" / "shop" / "5e55a0a0.jsonl", "".join(SESSION_LINES))
    try:
        read = wait_for(lambda: _capture(node).get("messages"), 60, "the session to be captured", [node])
        held = node.json("memory", "quarantine")
        assert len(held) == 1 and "get.example.sh" in held[0]["crystal"]["text"], held
        assert held[0]["crystal"]["speaker"] == "agent_in_transcript" and "instruction" in held[0]["flags"]
        found = {
            hit["crystal"]["text"]: hit["crystal"]
            for words in ("get.example.sh sudo", "deploy root", "force pushed", "deleting before", "approve review",
                          "trust files tmp", "sudo everywhere", "release Friday")
            for hit in node.json("memory", "search", words, "--mode", "keyword")
        }  # fmt: skip
        # the quote is held (found by no search); the sub-agent's prompt, command output, the meta
        # line and the reminders were never stored
        for never in ("get.example.sh", "deploy.sh", "force", "deleting", "always approve", "/tmp", "sudo"):
            assert not [text for text in found if never in text], (never, list(found))
        release = found["The release is on Friday."]
        assert release["speaker"] == "person_in_transcript"
        assert release["epistemic_layer"] != "directive"
        bootstrap = node.cli("memory", "bootstrap")
        assert bootstrap.returncode == 0, bootstrap.stderr
        assert "directives" not in bootstrap.stdout and "sudo" not in bootstrap.stdout, bootstrap.stdout
        assert read == 3  # u1, a1 and u2: the other ten lines are no one's turns in this conversation
    finally:
        log = node.stop()
    assert "Traceback" not in log, log


#: Twelve turns, each a fact of its own: the person's and the assistant's never share a crystal.
GROWING = [
    ("u1", "user", "The staging database lives on host pg-stage-3 in Frankfurt."),
    ("a1", "assistant", "I will point the migration scripts at the Frankfurt replica first."),
    ("u2", "user", "Our on-call rotation hands over every Tuesday at noon."),
    ("a2", "assistant", "The pager schedule in Opsgenie now shows the Tuesday handover."),
    ("u3", "user", "Invoices go out from billing@example.org on the 25th."),
    ("a3", "assistant", "Drafted the reminder job for the monthly invoice run."),
    ("u4", "user", "The iOS build needs Xcode 16.2, not the beta toolchain."),
    ("a4", "assistant", "Pinned the CI image to the stable compiler release."),
    ("u5", "user", "Marta owns the design system; ask her before renaming tokens."),
    ("a5", "assistant", "Added a CODEOWNERS entry so token renames request a review."),
    ("u6", "user", "Backups are kept for 35 days in the Glacier bucket."),
    ("a6", "assistant", "The lifecycle rule now expires archive objects after five weeks."),
]


def test_a_transcript_growing_by_a_few_turns_at_a_time_keeps_the_daemon_running(tmp_path: Path) -> None:
    """Issue 48: an agent appends several turns at a time to a session that already holds more.
    Capture once indexed the new chunk by the turns' positions in the whole file and raised
    IndexError, which stopped the daemon (and stopped it again at every restart). Every turn must be
    captured, each exactly once, and the daemon must go on running."""
    transcript = tmp_path / "claude" / "projects" / "ops" / f"{SESSION}.jsonl"
    node = _watching(tmp_path, transcript, "".join(claude_line(*turn) for turn in GROWING[:6]))
    try:
        wait_for(lambda: _capture(node).get("messages") == 6, 60, "the first six turns to be captured", [node])
        for count, batch in ((9, GROWING[6:9]), (12, GROWING[9:])):  # fewer new turns than the file holds
            with transcript.open("a") as handle:
                handle.write("".join(claude_line(*turn) for turn in batch))
            wait_for(partial(_holds, node, count), 60, f"{count} turns captured", [node])
        assert node.proc is not None and node.proc.poll() is None, "the daemon stopped"
        texts = [c["text"] for c in node.json("memory", "list", "--limit", "100")["crystals"]]
        for _, _, said in GROWING:
            assert sum(said in text for text in texts) == 1, (said, texts)
    finally:
        log = node.stop()
    assert "Traceback" not in log, log
