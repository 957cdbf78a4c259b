"""Issue 48: a part that fails mid-work, restarted by the daemon's supervisor, retries what it was
doing and does none of it twice. The failure is asked for by a failpoint (``ground.failpoints``,
counted: it fails the first time, then passes). The capture watcher's case runs in a real daemon
(tests/node/test_part_failures_daemon.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import sqlean

from ground import failpoints
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import Event
from memory.embedders.base import Vectors
from memory.embedders.hashing import HashingEmbedder
from memory.errors import StoreError
from memory.graph.links import auto_link
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.setup.settings import LlmSettings, MemorySettings
from memory.setup.store import embedded_hook
from memory.storage.after_embedding import owed_count
from memory.storage.store import MemoryStore
from memory.working_memory.dream import dream
from memory.working_memory.memory_md import WorkingMemoryFiles
from memory.working_memory.synthesis import ExtractiveSynthesizer
from node.runtime.lifecycle import TaskSupervisor
from tests.memory.conftest import FakeClock
from tests.memory.test_store import RecordingEmbedder

CRYSTALS = 150


async def _no_wait(_: float) -> None:
    return None


async def test_the_embedder_failing_mid_backlog_is_restarted_and_embeds_each_crystal_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = RecordingEmbedder()
    store = await IntakeStore.open(tmp_path / "memory.db", embedder)
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


def _word(n: int, stem: str) -> str:
    """A made-up word of its own for each ``n``: pairs share words with each other only, so no
    neighbour ties with another at the same similarity (the KNN would break such a tie either way)."""
    letters, n = "", n + 1
    while n:
        n, r = divmod(n - 1, 26)
        letters = chr(97 + r) + letters
    return stem + letters


def said_twice(pairs: int = 40) -> list[tuple[str, str]]:
    """(older, newer) statements about the same thing: the steps after embedding link each pair and
    mark the older one superseded (or, not the person's words, maybe outdated)."""
    return [
        (
            f"The {_word(n, 'zor')} key for the {_word(n, 'vel')} shed is in the {_word(n, 'kap')} drawer.",
            f"Actually, the {_word(n, 'zor')} key for the {_word(n, 'vel')} shed is now in the {_word(n, 'mub')} box.",
        )
        for n in range(pairs)
    ]


def _statements() -> list[NewCrystal]:
    pairs = said_twice()
    older = [NewCrystal(old, created_at_ms=1_700_000_000_000 + n) for n, (old, _) in enumerate(pairs)]
    newer = [NewCrystal(new, created_at_ms=1_800_000_000_000 + n) for n, (_, new) in enumerate(pairs)]
    return older + newer


def steps_outcome(db: Path) -> tuple[dict[str, int], dict[str, str], dict[str, int]]:
    """What the steps after embedding left in the file ``db``, by text (ids differ between files):
    how many links each crystal made (which neighbour of equal similarity it linked to is a tie the
    KNN breaks either way), who supersedes whom, and how many attribution rows of each action."""
    conn = sqlean.connect(f"file:{db}?mode=ro", uri=True)
    try:
        text = dict(conn.execute("SELECT id, text FROM crystals").fetchall())
        links = {text[src]: n for src, n in conn.execute("SELECT src_id, count(*) FROM associations GROUP BY src_id")}
        superseded = {
            text[c]: text[by]
            for c, by in conn.execute("SELECT id, superseded_by FROM crystals WHERE superseded_by NOT NULL")
        }
        actions = dict(conn.execute("SELECT action, count(*) FROM attributions GROUP BY action").fetchall())
    finally:
        conn.close()
    return links, superseded, actions


class _BreaksOnce:
    """The real steps after embedding, which fail once, at the ``at``-th crystal, before doing anything."""

    def __init__(self, at: int) -> None:
        self.steps = embedded_hook(MemorySettings(), LlmSettings())
        self.at, self.calls = at, Counter[str]()

    async def __call__(self, store: MemoryStore, crystal_id: str, vector: Vectors) -> int:
        if sum(self.calls.values()) + 1 == self.at and self.at > 0:
            self.at = 0
            raise StoreError("the judge fell over")
        self.calls[crystal_id] += 1
        return await self.steps(store, crystal_id, vector)


async def test_steps_after_embedding_that_fail_mid_batch_are_owed_and_done_once_after_the_restart(
    tmp_path: Path,
) -> None:
    """Before the store kept them owed, the crystals after the failing one in its batch were never
    linked or checked for supersession: their vectors were written, so no backlog held them."""
    outcomes = []
    for name, at in (("clean", 0), ("broken", 5)):
        hook = _BreaksOnce(at)
        store = await IntakeStore.open(tmp_path / f"{name}.db", HashingEmbedder(), on_embedded=hook)
        try:
            await store.remember_many(_statements())
            supervisor = TaskSupervisor(sleep=_no_wait)

            async def drain(store: IntakeStore = store) -> None:  # the daemon's embedder loop
                while await store.embed_backlog(batch_size=64):
                    pass

            await supervisor.spawn("memory-embedder", drain)
            restarts = supervisor.health().get("memory-embedder")
            assert (restarts.restarts if restarts else 0) == (1 if at else 0)
            assert await store.backlog_size() == 0
            assert await owed_count(store) == (0, 0)
            assert sorted(hook.calls.values()) == [1] * 80  # every crystal's steps, each once
        finally:
            await store.close()
        outcomes.append(steps_outcome(tmp_path / f"{name}.db"))
    clean, broken = outcomes
    assert sum(clean[0].values()) >= 80 and len(clean[1]) == 40  # the data does make links and supersessions
    assert broken == clean


NOTES = ("Shipped the billing page", "The spare key is under the blue pot", "Call the roofer on Friday")


async def _dream_in_the_daemon(folder: Path, where: str | None) -> tuple[list[str], tuple[str, ...], int]:
    """Three scratch notes and a high cortisol, dreamt by the daemon's dream loop under a supervisor
    (failing once at ``where``); the crystals' texts, Active Context, and how often it restarted."""
    clock = FakeClock()
    store = await IntakeStore.open(folder / "memory.db", HashingEmbedder(), now_ms=clock, on_embedded=auto_link)
    try:
        files = WorkingMemoryFiles(folder / "workspace")
        endocrine = await Endocrine.attach(store)
        await endocrine.observe([Event.URGENCY, Event.URGENCY])  # cortisol over 0.7: a note of its own
        for note in NOTES:
            files.scratch.append(note, 0.8, store.now_ms())
        supervisor = TaskSupervisor(sleep=_no_wait)

        async def dream_loop() -> None:  # the daemon's timer, one round
            clock.advance(60_000)
            await dream(store, files, ExtractiveSynthesizer(), hormones=endocrine)

        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(failpoints.ENV, f"{where}=1" if where else "")
            patch.setattr(failpoints, "_hits", {})
            await supervisor.spawn("memory-dream", dream_loop)
        health = supervisor.health().get("memory-dream")
        assert where is None or (health is not None and "FailpointHit" in str(health.last_error))
        assert files.scratch.read().notes == ()
        texts = sorted([c.text async for c in store.iter_live()])
        return texts, files.load().bullets("Active Context"), health.restarts if health else 0
    finally:
        await store.close()


@pytest.mark.parametrize("where", ["dream:hormone-noted", "dream:note-indexed", "dream:before-consume"])
async def test_a_dream_cut_off_mid_way_is_restarted_and_stores_each_note_once(tmp_path: Path, where: str) -> None:
    """The dream loop fails once at ``where`` (after a hormone's note is in scratch, after the first
    note is a crystal, after MEMORY.md is written): restarted and counted, and the retry (a minute
    later) leaves what a dream that never failed leaves: each note one crystal, the hormone's note
    once, scratch empty, the same Active Context. Before, a cut after the hormone's note and before
    it was recorded as noted made the retry write a second note in other words ("... at the dream
    of <a minute later>"): two crystals, two bullets."""
    (tmp_path / "clean").mkdir()
    (tmp_path / "cut").mkdir()
    clean = await _dream_in_the_daemon(tmp_path / "clean", None)
    cut = await _dream_in_the_daemon(tmp_path / "cut", where)
    assert cut[2] == 1 and clean[2] == 0
    assert sum(t.startswith("cortisol was high") for t in cut[0]) == 1, cut[0]
    assert cut[:2] == clean[:2]
