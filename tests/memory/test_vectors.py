"""The vector index: exact after rescoring, and in step with writes made by other connections."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory.embedders.base import normalise_rows
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.storage.vectors import VectorIndex, binary_codes


def unit(rng: np.random.Generator, n: int, dim: int = 64) -> np.ndarray:
    return normalise_rows(rng.standard_normal((n, dim)).astype(np.float32))


async def test_knn_is_exact_when_the_candidates_cover_the_store(store: IntakeStore) -> None:
    rng = np.random.default_rng(5)
    index = VectorIndex("test-64", 64)
    await index.ensure(store.writer)
    vectors = unit(rng, 150)
    async with store.transaction() as db:
        await index.put(db, [(i + 1, v) for i, v in enumerate(vectors)])
    query = unit(rng, 1)[0]
    got = await index.knn(store.reader(), query, 10)
    exact = np.argsort(-(vectors @ query))[:10] + 1
    assert [rowid for rowid, _ in got] == list(exact)
    assert got[0][1] == pytest.approx(float(vectors[exact[0] - 1] @ query), abs=1e-6)


def test_codes_match_sqlite_vec_quantisation() -> None:
    import sqlean
    import sqlite_vec

    conn = sqlean.connect(":memory:")
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    vector = unit(np.random.default_rng(1), 1, 384)[0]
    expected = conn.execute("SELECT vec_quantize_binary(vec_f32(?))", (vector.tobytes(),)).fetchone()[0]
    assert binary_codes(vector).tobytes() == expected


async def test_a_second_connection_sees_appends_rewrites_and_deletions(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    writer = await IntakeStore.open(path, HashingEmbedder())
    other = await IntakeStore.open(path, HashingEmbedder())  # as another process would
    try:
        await writer.remember(NewCrystal("alpha bravo charlie"))
        query = HashingEmbedder().embed_query("alpha bravo charlie")
        assert [r for r, _ in await other.vectors.knn(other.reader(), query, 5)] == [1]
        # Appends from the writer are picked up incrementally.
        await writer.remember_many([NewCrystal(f"delta echo {i}") for i in range(30)])
        await writer.embed_backlog()
        assert len(await other.vectors.knn(other.reader(), query, 50)) == 31
        # A rewrite of an existing vector (e.g. re-embedding) and a deletion force a reload.
        async with writer.transaction() as db:
            await writer.vectors.put(db, [(1, HashingEmbedder().embed_query("zulu yankee"))])
            await writer.vectors.delete(db, [2, 3])
        hits = dict(await other.vectors.knn(other.reader(), HashingEmbedder().embed_query("zulu yankee"), 50))
        assert 2 not in hits and 3 not in hits
        assert hits[1] > 0.99  # the rewritten vector, not the stale one
    finally:
        await other.close()
        await writer.close()
