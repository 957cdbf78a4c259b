"""The vector index of one embedder: a binary-quantised sqlite-vec table for a coarse KNN,
and the float vectors beside it for exact rescoring.

sqlite-vec is brute force: a float KNN over 100K 384-d vectors costs ~80 ms on
two cores, a hamming KNN over their 1-bit quantisations a fraction of that.
So a query takes ``k * OVERSAMPLE`` (at least ``MIN_CANDIDATES``) nearest by
hamming distance, then rescores those exactly by cosine from the float table
and keeps the best k (DESIGN.md measured recall 0.99 with 100-200 rescored
candidates on real sentence embeddings). Each embedder gets its own pair of tables, so spaces
never mix. The KNN always runs alone, never inside a JOIN.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import aiosqlite
import numpy as np

from memory.embedders.base import Vectors
from memory.errors import EmbedderError

# The coarse KNN's cost grows with its k (measured at 100K: 15 ms at k=50, 49 ms at 200, 96 ms at
# 400), so oversample moderately.
OVERSAMPLE = 2
MIN_CANDIDATES = 100


def _slug(embedder_id: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", embedder_id.lower()).strip("_")
    if not slug:
        raise ValueError(f"embedder id {embedder_id!r} has no usable characters")
    return slug[:50]


def vector_blob(vector: Vectors) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


class VectorIndex:
    """Tables ``vecb_<slug>`` (vec0 ``bit[dim]``) and ``vecf_<slug>`` (rowid -> float32 blob)."""

    def __init__(self, embedder_id: str, dim: int) -> None:
        if dim % 8:
            raise EmbedderError(f"embedding dimension must be a multiple of 8 for the bit index, got {dim}")
        self.embedder_id = embedder_id
        self.dim = dim
        slug = _slug(embedder_id)
        self.bit_table = f"vecb_{slug}"
        self.float_table = f"vecf_{slug}"

    async def ensure(self, writer: aiosqlite.Connection) -> None:
        await writer.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {self.bit_table} USING vec0(embedding bit[{self.dim}])"
        )
        await writer.execute(
            f"CREATE TABLE IF NOT EXISTS {self.float_table} (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)"
        )
        await writer.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
            (f"vectors:{self.float_table}", f"{self.embedder_id}|{self.dim}"),
        )

    async def put(self, db: aiosqlite.Connection, rows: Sequence[tuple[int, Vectors]]) -> None:
        """Store vectors by rowid, replacing any there (vec0 cannot replace in place: delete first)."""
        await self.delete(db, [rowid for rowid, _ in rows])
        blobs = [(rowid, vector_blob(vector)) for rowid, vector in rows]
        await db.executemany(f"INSERT INTO {self.float_table} (rowid, embedding) VALUES (?, ?)", blobs)
        await db.executemany(
            f"INSERT INTO {self.bit_table} (rowid, embedding) VALUES (?, vec_quantize_binary(vec_f32(?)))", blobs
        )

    async def delete(self, db: aiosqlite.Connection, rowids: Sequence[int]) -> None:
        params = [(rowid,) for rowid in rowids]
        await db.executemany(f"DELETE FROM {self.bit_table} WHERE rowid = ?", params)
        await db.executemany(f"DELETE FROM {self.float_table} WHERE rowid = ?", params)

    async def count(self, db: aiosqlite.Connection) -> int:
        async with db.execute(f"SELECT count(*) FROM {self.float_table}") as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def knn(self, reader: aiosqlite.Connection, query: Vectors, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the k nearest vectors, nearest first."""
        blob = vector_blob(query)
        candidates = max(k * OVERSAMPLE, MIN_CANDIDATES)
        async with reader.execute(coarse_knn_sql(self.bit_table), (blob, candidates)) as cursor:
            rowids = [int(r[0]) for r in await cursor.fetchall()]
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        async with reader.execute(
            f"SELECT rowid, embedding FROM {self.float_table} WHERE rowid IN ({marks})", rowids
        ) as cursor:
            rows = list(await cursor.fetchall())
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), self.dim)
        similarities = matrix @ np.asarray(query, dtype=np.float32)
        best = np.argsort(-similarities, kind="stable")[:k]
        return [(int(ids[i]), float(similarities[i])) for i in best]


def coarse_knn_sql(bit_table: str) -> str:
    """The hamming KNN on the bit table, alone: parameters (float32 query blob, k)."""
    return (
        f"SELECT rowid, distance FROM {bit_table} "
        "WHERE embedding MATCH vec_quantize_binary(vec_f32(?)) AND k = ? ORDER BY distance"
    )


async def drop_vector_tables(writer: aiosqlite.Connection, embedder_id: str) -> None:
    """Remove an old embedder's tables once nothing points at them any more."""
    slug = _slug(embedder_id)
    await writer.execute(f"DROP TABLE IF EXISTS vecb_{slug}")
    await writer.execute(f"DROP TABLE IF EXISTS vecf_{slug}")
