"""What must survive a power loss is synced before the step that depends on it (issue 15,
finding 6): a durable transaction syncs the write-ahead log before it returns, an ordinary one
does not (search and ingest stay fast), and the dream syncs its notes' crystals before it empties
scratch, their only other copy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.intake.store import IntakeStore
from memory.storage import connection
from memory.working_memory.dream import dream
from memory.working_memory.memory_md import WorkingMemoryFiles
from memory.working_memory.synthesis import ExtractiveSynthesizer


class SyncSpy:
    """Named spy on the real ``os`` the store's connection module uses: records which files were
    fsynced (and still syncs them)."""

    def __init__(self, log: list[str]) -> None:
        self._log = log

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def fsync(self, fd: int) -> None:
        self._log.append(os.readlink(f"/proc/self/fd/{fd}"))
        os.fsync(fd)


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    log: list[str] = []
    monkeypatch.setattr(connection, "os", SyncSpy(log))
    return log


async def test_only_a_durable_transaction_syncs_the_log_before_it_returns(
    store: IntakeStore, synced: list[str]
) -> None:
    async with store.transaction() as db:
        await db.execute("INSERT INTO meta (key, value) VALUES ('a', '1')")
    assert synced == []
    async with store.transaction(durable=True) as db:
        await db.execute("INSERT INTO meta (key, value) VALUES ('b', '1')")
    assert synced == [str(store.path) + "-wal"]


async def test_the_dream_syncs_its_notes_before_it_empties_scratch(
    store: IntakeStore, tmp_path: Path, synced: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files = WorkingMemoryFiles(tmp_path / "workspace")
    files.scratch.append("Deadline for the VAT report is Friday", 0.8, store.now_ms())
    events: list[str] = []
    consume = files.scratch.consume

    def consume_after_sync(snapshot: object) -> None:
        events.append(f"scratch emptied after {len(synced)} sync(s)")
        consume(snapshot)  # type: ignore[arg-type]

    monkeypatch.setattr(files.scratch, "consume", consume_after_sync)
    report = await dream(store, files, ExtractiveSynthesizer())
    assert report.accepted and report.notes_indexed == 1
    assert synced and synced[-1] == str(store.path) + "-wal"
    assert events == [f"scratch emptied after {len(synced)} sync(s)"]
    assert files.scratch.read().notes == ()


async def test_a_failed_checkpoint_still_closes_every_connection_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: Ctrl-C during an import hung after "database table is locked" from ``close``: the
    checkpoint raised, the writer was never closed, and its thread kept the process alive."""
    import sqlean

    from memory.embedders.hashing import HashingEmbedder
    from memory.model import NewCrystal

    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    await store.remember(NewCrystal("kept through a failed checkpoint"))
    real = store.writer.execute

    def locked(sql: str, *args: object) -> object:
        if "wal_checkpoint" in sql:
            raise sqlean.OperationalError("database table is locked")
        return real(sql, *args)

    monkeypatch.setattr(store.writer, "execute", locked)
    threads = [conn._thread for conn in (*store._readers, store.writer)]
    await store.close()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    again = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        assert [c.text async for c in again.iter_live()] == ["kept through a failed checkpoint"]
    finally:
        await again.close()
