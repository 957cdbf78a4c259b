"""Issue 48: ``kill -9`` while the steps after embedding (type by meaning, links, supersession) run.

The killed process had written a batch's vectors and done the steps of its first crystal only;
before those steps were kept owed in the file, ``memory embed`` run again found nothing to do and
the rest of the batch was never linked or checked for supersession."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.conftest import clean_env, run_cli
from tests.memory.test_part_failures import said_twice, steps_outcome

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")


def test_a_kill_during_the_steps_after_embedding_leaves_them_owed_and_a_rerun_does_each_once(tmp_path: Path) -> None:
    source = tmp_path / "mem0.json"  # a Mem0 export: statements, each with when it was said
    pairs = said_twice()
    said = [(old, f"2024-01-01T00:{n:02d}:00Z") for n, (old, _) in enumerate(pairs)]
    said += [(new, f"2025-01-01T00:{n:02d}:00Z") for n, (_, new) in enumerate(pairs)]
    source.write_text(json.dumps([{"id": f"m{i}", "memory": t, "created_at": at} for i, (t, at) in enumerate(said)]))
    for name in ("clean", "killed"):
        data = str(tmp_path / name)
        assert run_cli("memory", "import", str(source), "--no-embed", "--data-dir", data, env=ENV).returncode == 0
    killed = run_cli("memory", "embed", "--data-dir", str(tmp_path / "killed"),
                     env={**ENV, "BITTERBOT_FAILPOINTS": "embed:after-steps=kill"})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    for name in ("clean", "killed"):
        done = run_cli("memory", "embed", "--json", "--data-dir", str(tmp_path / name), env=ENV)
        assert done.returncode == 0, done.stderr
    clean, resumed = (steps_outcome(tmp_path / name / "memory" / "crystals.db") for name in ("clean", "killed"))
    assert clean[0] and clean[2].get("maybe_outdated") == 40, clean[2]  # links, and a note on each older statement
    assert resumed == clean  # every crystal's steps, none lost and none repeated
