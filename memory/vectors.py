"""One sqlite-vec table per embedder, so vectors of two models never share a space.

The KNN query runs alone (never inside a JOIN: the planner may re-run it per
joined row); callers fetch and filter rows by rowid afterwards.
"""

from __future__ import annotations

import re

import aiosqlite
import numpy as np

from memory.embedders.base import Vectors


def vec_table(embedder_id: str) -> str:
    """A safe table name for an embedder id (``hashing-v1-384`` -> ``vec_hashing_v1_384``)."""
    slug = re.sub(r"[^a-z0-9]+", "_", embedder_id.lower()).strip("_")
    if not slug:
        raise ValueError(f"embedder id {embedder_id!r} has no usable characters")
    return f"vec_{slug}"[:60]


def vector_blob(vector: Vectors) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


async def ensure_vec_table(writer: aiosqlite.Connection, embedder_id: str, dim: int) -> str:
    """Create the embedder's table if needed and record its id and dimension in ``meta``."""
    table = vec_table(embedder_id)
    await writer.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0(embedding float[{dim}] distance_metric=cosine)"
    )
    await writer.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO NOTHING",
        (f"vec:{table}", f"{embedder_id}|{dim}"),
    )
    return table


async def knn(reader: aiosqlite.Connection, table: str, query: Vectors, k: int) -> list[tuple[int, float]]:
    """(rowid, cosine distance) of the k nearest vectors, nearest first."""
    async with reader.execute(
        f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
        (vector_blob(query), k),
    ) as cursor:
        return [(int(r[0]), float(r[1])) for r in await cursor.fetchall()]
