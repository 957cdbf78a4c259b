"""`bitterbot-node memory note|bootstrap|dream|consolidate|unmerge|hormones|event` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import clean_env, run_cli

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")


def test_note_bootstrap_dream_cycle(tmp_path: Path) -> None:
    data = tmp_path / "d"
    noted = run_cli(
        "memory", "note", "Flight to Lisbon on Friday", "--importance", "0.9", "--data-dir", str(data), env=ENV
    )
    assert noted.returncode == 0, noted.stderr
    assert (data / "workspace" / "memory" / "scratch.md").read_text().count("Flight to Lisbon on Friday") == 1
    found = json.loads(run_cli("memory", "search", "Lisbon", "--json", "--data-dir", str(data), env=ENV).stdout)
    assert found[0]["crystal"]["text"] == "Flight to Lisbon on Friday"

    before = run_cli("memory", "bootstrap", "--context-window", "8000", "--data-dir", str(data), env=ENV).stdout
    assert "Notes not yet synthesised" in before and "Flight to Lisbon on Friday" in before

    dreamt = run_cli("memory", "dream", "--json", "--data-dir", str(data), env=ENV)
    assert dreamt.returncode == 0, dreamt.stderr
    assert json.loads(dreamt.stdout)["accepted"] is True
    after = run_cli("memory", "bootstrap", "--data-dir", str(data), env=ENV).stdout
    assert "## Active Context\n- Flight to Lisbon on Friday" in after
    assert "Notes not yet synthesised" not in after


def test_consolidate_dry_run_and_unmerge_errors(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    run_cli("memory", "add", "Some fact", "--data-dir", data, env=ENV)
    dry = run_cli("memory", "consolidate", "--dry-run", "--json", "--data-dir", data, env=ENV)
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] is True and report["rescored"] == 1
    assert "consolidating" in dry.stderr  # a progress bar on stderr; stdout stays JSON
    text = run_cli("memory", "consolidate", "--data-dir", data, env=ENV)
    assert text.returncode == 0 and text.stdout.startswith("consolidation did: rescore 1")
    missing = run_cli("memory", "unmerge", "nope", "--data-dir", data, env=ENV)
    assert missing.returncode == 2 and "was not merged" in missing.stderr


def test_events_move_the_hormones_and_bad_input_is_refused(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    moved = run_cli("memory", "event", "reward", "--json", "--data-dir", data, env=ENV)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["dopamine"] >= 0.39  # 0.15 + 0.25, decayed a little since
    shown = json.loads(run_cli("memory", "hormones", "--json", "--data-dir", data, env=ENV).stdout)
    assert shown["dopamine"] >= 0.39 and shown["network_override"] is None
    assert run_cli("memory", "event", "joy", "--data-dir", data, env=ENV).returncode == 2
    empty = run_cli("memory", "note", "   ", "--data-dir", data, env=ENV)
    assert empty.returncode == 2 and "needs some text" in empty.stderr
