"""Importing files: chunking, incremental re-import, and surviving a kill mid-import."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
import sqlean

from memory.embedders.hashing import HashingEmbedder
from memory.importer import crystals_from_file, find_sources, parse_message
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.transfer.imported_files import imported_file_hash
from tests.conftest import CLI, clean_env, run_cli

HASHING = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing")


def test_markdown_is_chunked_at_headings_with_line_ranges(tmp_path: Path) -> None:
    doc = tmp_path / "notes.md"
    doc.write_text("# Deploy\nrun make release\n\n# Rollback\nrun make rollback\nthen page the on-call\n")
    chunks = list(crystals_from_file(find_sources(doc)[0]))
    assert [c.text for c in chunks] == [
        "# Deploy\nrun make release",
        "# Rollback\nrun make rollback\nthen page the on-call",
    ]
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 3), (4, 6)]


def test_jsonl_messages_carry_their_neighbours_as_context(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    log.write_text(
        '{"speaker": "Ann", "text": "moving to Lisbon?"}\nnot json\n{"speaker": "Bo", "text": "yes, in May"}\n'
        '{"speaker": "Ann", "text": "lovely"}\n'
    )
    crystals = list(crystals_from_file(find_sources(log)[0]))
    assert [c.text for c in crystals] == ["Ann: moving to Lisbon?", "Bo: yes, in May", "Ann: lovely"]
    assert [c.context for c in crystals] == [
        "Bo: yes, in May",
        "Ann: moving to Lisbon?\nAnn: lovely",
        "Bo: yes, in May",
    ]
    assert [c.line_start for c in crystals] == [1, 3, 4]


async def test_context_words_find_a_crystal_by_keyword(store: IntakeStore) -> None:
    from memory.retrieval.query import SearchMode, SearchRequest
    from memory.retrieval.search import search

    await store.remember(NewCrystal("yes, in May", context="Ann: are you moving to Lisbon?"))
    await store.remember(NewCrystal("Lisbon is the capital of Portugal"))
    hits = await search(store, SearchRequest("Lisbon", mode=SearchMode.KEYWORD, explain=True))
    assert [h.crystal.text for h in hits] == [
        "Lisbon is the capital of Portugal",
        "yes, in May",
    ]  # text outranks context


def test_jsonl_messages_and_bad_lines() -> None:
    assert parse_message('{"speaker": "Ann", "text": "hi", "timestamp": "2026-01-01T00:00:00Z"}') == (
        "hi",
        "Ann",
        1_767_225_600_000,
    )
    assert parse_message('{"role": "user", "content": "yo"}') == ("yo", "user", None)
    for bad in ["", "not json", "[1,2]", '{"text": ""}', '{"text": 5}']:
        assert parse_message(bad) is None


@pytest.mark.slow
def test_cli_import_is_incremental(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# One\nalpha beta\n")
    (folder / "b.txt").write_text("gamma delta\n")
    data = str(tmp_path / "data")
    first = run_cli("memory", "import", str(folder), "--data-dir", data, "--json", env=HASHING)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert {k: report[k] for k in ("files", "skipped_files", "created", "duplicates", "embedded", "embedding")} == {
        "files": 2, "skipped_files": 0, "created": 2, "duplicates": 0, "embedded": 2, "embedding": "here"
    }  # fmt: skip
    (folder / "b.txt").write_text("gamma delta\n\nepsilon\n")
    second = json.loads(run_cli("memory", "import", str(folder), "--data-dir", data, "--json", env=HASHING).stdout)
    assert second["skipped_files"] == 1 and second["files"] == 1
    # The changed file is read again; its one chunk is new text.
    assert (second["created"], second["duplicates"]) == (1, 0)


def count_committed(db: Path) -> int:
    """Rows visible to a read-only reader: what a crash would leave behind."""
    if not db.exists():
        return 0
    try:
        conn = sqlean.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM crystals").fetchone()[0])
        finally:
            conn.close()
    except sqlean.OperationalError:  # schema not created yet
        return 0


async def _total(db: Path) -> int:
    store = await IntakeStore.open(db, HashingEmbedder())
    try:
        return int((await store.stats())["total"])
    finally:
        await store.close()


@pytest.mark.slow
def test_kill_mid_import_loses_nothing_committed_and_resumes(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    total = 60_000
    with log.open("w") as handle:
        for i in range(total):
            handle.write(json.dumps({"speaker": "u", "text": f"message number {i} about topic {i % 97}"}) + "\n")
    data = tmp_path / "data"
    db = data / "memory" / "crystals.db"
    proc = subprocess.Popen(
        [*CLI, "memory", "import", str(log), "--data-dir", str(data), "--no-embed"],
        env=HASHING,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        committed = 0
        while time.monotonic() < deadline and committed < 2_000 and proc.poll() is None:
            time.sleep(0.05)
            committed = count_committed(db)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    assert 0 < committed < total, "the import should have been killed half way"

    after_kill = asyncio.run(_total(db))  # the file opens after the kill
    assert after_kill >= committed  # nothing committed was lost
    assert after_kill % 1000 == 0  # only whole batches were committed
    assert not asyncio.run(_imported(db, str(log.resolve())))  # the file is not marked as done

    resumed = run_cli(
        "memory", "import", str(log), "--data-dir", str(data), "--no-embed", "--json", env=HASHING, timeout=180
    )
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["created"] == total - after_kill
    assert report["duplicates"] == after_kill
    assert count_committed(db) == total
    assert asyncio.run(_imported(db, str(log.resolve())))


async def _imported(db: Path, key: str) -> bool:
    store = await IntakeStore.open(db, HashingEmbedder())
    try:
        return await imported_file_hash(store, key) is not None
    finally:
        await store.close()
