"""Restoring an export never half-writes (issue 48): killed with SIGKILL mid-way (a real process,
``kill -9`` at a batch boundary by the failpoint ``restore:after-batch=kill``), the store holds whole
batches only, and the same command again completes it with no crystal twice, ids kept, the file
sound. A restore interrupted by a failure in-process goes on the same way
(``tests/memory/test_transfer.py``)."""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.supersession.detect import supersede
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


async def _remember_with_history(db: Path) -> None:
    """CRYSTALS notes; each even one superseded by the next, and linked to the note 600 on."""
    store = await IntakeStore.open(db, HashingEmbedder())
    try:
        said = await store.remember_many([NewCrystal(f"note {n}: the shed roof needs tiles") for n in range(CRYSTALS)])
        ids = said.ids
        for n in range(0, CRYSTALS, 2):
            await supersede(store, ids[n], ids[n + 1], reason="said again", actor="local")
        async with store.transaction() as tx:
            await tx.executemany(
                "INSERT INTO associations (src_id, dst_id, type, weight, created_ms) "
                "VALUES (?, ?, 'related_to', 0.5, 1)",
                [(ids[n], ids[n + CRYSTALS // 2]) for n in range(CRYSTALS // 2)],
            )
    finally:
        await store.close()


def _history(data: Path) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Who supersedes whom and what links to what, by text (an unvouched-for file's crystals get new ids)."""
    with closing(sqlite3.connect(f"file:{data / 'memory' / 'crystals.db'}?mode=ro", uri=True)) as db:
        text = dict(db.execute("SELECT id, text FROM crystals").fetchall())
        superseded = {
            (text[c], text[by])
            for c, by in db.execute("SELECT id, superseded_by FROM crystals WHERE superseded_by NOT NULL")
        }
        links = {(text[s], text[d]) for s, d in db.execute("SELECT src_id, dst_id FROM associations")}
    return superseded, links


def test_an_unvouched_for_export_killed_mid_way_keeps_its_links_and_supersessions_on_the_rerun(tmp_path: Path) -> None:
    """Issue 48: another node's export comes in as text under new ids, its links and supersessions
    applied only among crystals it created. Before each batch's records were written down, the
    rerun after a kill took the first run's crystals for ones that were here before the file and
    dropped every link and supersession reaching them (here: all but a handful)."""
    home, other, clean = tmp_path / "home", tmp_path / "laptop", tmp_path / "clean"
    assert run_cli("init", "--data-dir", str(home), env=ENV).returncode == 0
    asyncio.run(_remember_with_history(home / "memory" / "crystals.db"))
    export = tmp_path / "memories.jsonl"
    assert run_cli("memory", "export", str(export), "--data-dir", str(home), env=ENV).returncode == 0
    for data in (other, clean):  # other identities: home's signature vouches for nothing here
        assert run_cli("init", "--data-dir", str(data), env=ENV).returncode == 0
    killed = run_cli("memory", "import", str(export), "--no-embed", "--data-dir", str(other),
                     env={**ENV, "BITTERBOT_FAILPOINTS": "restore:after-batch=kill"})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    reports = {}
    for data in (other, clean):
        done = run_cli("memory", "import", str(export), "--no-embed", "--json", "--data-dir", str(data), env=ENV)
        assert done.returncode == 0, done.stderr
        reports[data] = json.loads(done.stdout)
    # each supersession with its own 'updates' link, and each note linked to the one 600 on
    assert (reports[clean]["superseded"], reports[clean]["links"]) == (CRYSTALS // 2, CRYSTALS)
    assert (reports[other]["superseded"], reports[other]["links"]) == (
        reports[clean]["superseded"],
        reports[clean]["links"],
    )
    assert _history(other) == _history(clean) == _history(home)
    assert len(_rows(other)) == CRYSTALS
