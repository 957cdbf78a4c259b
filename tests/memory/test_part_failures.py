"""Issue 48: a part that fails mid-work, restarted by the daemon's supervisor, retries what it was
doing and does none of it twice. The failure is asked for by a failpoint (``ground.failpoints``,
counted: it fails the first time, then passes). The capture watcher's case runs in a real daemon
(tests/node/test_part_failures_daemon.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ground import failpoints
from memory.model import NewCrystal
from memory.storage.store import MemoryStore
from node.runtime.lifecycle import TaskSupervisor
from tests.memory.test_store import RecordingEmbedder

CRYSTALS = 150


async def _no_wait(_: float) -> None:
    return None


async def test_the_embedder_failing_mid_backlog_is_restarted_and_embeds_each_crystal_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = RecordingEmbedder()
    store = await MemoryStore.open(tmp_path / "memory.db", embedder)
    try:
        await store.remember_many([NewCrystal(f"Shelf {n} holds the winter tyres.") for n in range(CRYSTALS)])
        assert await store.backlog_size() == CRYSTALS
        embedder.seen.clear()
        monkeypatch.setenv(failpoints.ENV, "embed:batch=1")
        monkeypatch.setattr(failpoints, "_hits", {})
        supervisor = TaskSupervisor(sleep=_no_wait)

        async def drain() -> None:  # the daemon's embedder loop, until the backlog is empty
            while await store.embed_backlog(batch_size=64):
                pass

        await supervisor.spawn("memory-embedder", drain)
        health = supervisor.health()["memory-embedder"]
        assert health.restarts == 1 and "FailpointHit" in str(health.last_error)
        assert await store.backlog_size() == 0
        assert sorted(embedder.seen) == sorted(f"Shelf {n} holds the winter tyres." for n in range(CRYSTALS))
    finally:
        await store.close()
