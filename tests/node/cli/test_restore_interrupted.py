"""Restoring an export never half-writes (issue 48): killed with SIGKILL mid-way (a real process,
``kill -9`` at a batch boundary by the failpoint ``restore:after-batch=kill``), the store holds whole
batches only, and the same command again completes it with no crystal twice, ids kept, the file
sound. A restore interrupted by a failure in-process goes on the same way
(``tests/memory/test_transfer.py``)."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.conftest import clean_env, run_cli

pytestmark = pytest.mark.slow  # real CLI processes

ENV = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")
CRYSTALS = 1_200  # over two batches of 500


def _rows(data: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(f"file:{data / 'memory' / 'crystals.db'}?mode=ro", uri=True)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return [(str(r[0]), str(r[1])) for r in db.execute("SELECT id, content_hash FROM crystals ORDER BY id")]


def test_a_restore_killed_mid_way_is_whole_batches_and_a_rerun_completes_it_once(tmp_path: Path) -> None:
    source, home, other = tmp_path / "chat.jsonl", tmp_path / "home", tmp_path / "laptop"
    with source.open("w") as out:
        for n in range(CRYSTALS):
            out.write(json.dumps({"role": "user", "content": f"note {n}: the shed roof needs tiles"}) + "\n")
    assert run_cli("init", "--data-dir", str(home), env=ENV).returncode == 0
    assert run_cli("memory", "import", str(source), "--no-embed", "--data-dir", str(home), env=ENV).returncode == 0
    export = tmp_path / "memories.jsonl"
    assert run_cli("memory", "export", str(export), "--data-dir", str(home), env=ENV).returncode == 0
    # The same identity on the other machine: its own export, restored as it was (ids kept).
    assert run_cli("init", "--data-dir", str(other), env=ENV).returncode == 0
    shutil.copy(home / "identity.key", other / "identity.key")
    killed = run_cli("memory", "import", str(export), "--no-embed", "--data-dir", str(other),
                     env={**ENV, "BITTERBOT_FAILPOINTS": "restore:after-batch=kill"})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(_rows(other)) == 500  # the first batch, whole; nothing of the second
    again = run_cli("memory", "import", str(export), "--no-embed", "--json", "--data-dir", str(other), env=ENV)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["created"], report["duplicates"]) == (CRYSTALS - 500, 500), report
    restored, original = _rows(other), _rows(home)
    assert restored == original  # every crystal, under its own id, once
    assert len({h for _, h in restored}) == CRYSTALS
