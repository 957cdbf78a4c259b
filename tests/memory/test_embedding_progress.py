"""What `status` says of the background embedding (issue 32): how many wait, the rate, an ETA."""

from __future__ import annotations

from pathlib import Path

from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.setup.embedding import EmbeddingProgress
from memory.storage.after_embedding import MAX_ATTEMPTS, owe, owed_count


def test_the_rate_and_eta_follow_the_runs_and_nothing_waiting_says_nothing() -> None:
    progress = EmbeddingProgress(backlog=1_000)
    owes = {"steps_owed": 0, "steps_set_aside": 0}
    assert progress.as_dict() == {"backlog": 1_000, "embedded": 0, "per_s": None, "eta_s": None} | owes
    assert progress.summary() == "1,000 waiting to be embedded"  # no rate yet: no guess
    progress.record(100, 2.0)  # 50/s
    assert progress.as_dict() == {"backlog": 900, "embedded": 100, "per_s": 50.0, "eta_s": 18} | owes
    progress.record(100, 1.0)  # 100/s: the rate moves towards it, not to it
    assert progress.as_dict()["per_s"] == 65.0 and progress.summary() == "800 waiting to be embedded (about 1 min)"
    progress.record(800, 8.0)
    assert progress.summary() is None and progress.as_dict()["eta_s"] is None
    progress.record(0, 5.0)  # an idle run does not drag the rate down
    assert progress.as_dict()["per_s"] == 75.5


async def test_status_counts_the_steps_embedded_crystals_still_owe_and_those_set_aside(tmp_path: Path) -> None:
    """Issue 48: the steps after embedding are kept owed in the file; status says how many wait and
    how many were set aside after failing three times (before, only the log said so)."""
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        ids = [(await store.remember(NewCrystal(f"The router {n} sits in room {n}"))).crystal.id for n in range(3)]
        async with store.transaction() as db:
            await owe(db, [(n + 1000, crystal_id) for n, crystal_id in enumerate(ids)])
            await db.execute("UPDATE after_embedding_owed SET attempts = ? WHERE rowid = 1000", (MAX_ATTEMPTS,))
        progress = EmbeddingProgress()
        progress.steps_owed, progress.steps_set_aside = await owed_count(store)
    finally:
        await store.close()
    assert (progress.as_dict()["steps_owed"], progress.as_dict()["steps_set_aside"]) == (2, 1)
    assert progress.summary() == "1 whose links and supersession failed (see the log)"
