"""The vector index of one embedder: binary codes for a coarse KNN, float vectors for exact rescoring.

sqlite-vec is brute force: a float KNN over 100K 384-d vectors costs ~80 ms on
two cores, its own hamming KNN over 1-bit codes 15-50 ms depending on k. The
codes are small (48 bytes per crystal), so the coarse step runs in memory
instead: a numpy hamming scan over 100K codes takes ~2 ms. It proposes
``k * OVERSAMPLE`` (at least ``MIN_CANDIDATES``) candidates, which are rescored
exactly by cosine from the float table, the authority: a candidate whose
vector is gone is simply dropped (DESIGN.md measured recall 0.99 with 100-200
rescored candidates on real sentence embeddings).

The in-memory codes follow the database through ``meta``: every write that
deletes or rewrites a vector (or adds one below the highest rowid) bumps a
version in the same transaction, and a reader seeing a new version reloads;
plain appends are loaded incrementally by rowid. So writes from another
process (the CLI while the daemon runs) are seen by the next query. The codes
are also kept in a vec0 ``bit`` table, which a reload reads (48 bytes a row).
Each embedder gets its own pair of tables, so spaces never mix.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import aiosqlite
import numpy as np

from memory.embedders.base import Vectors
from memory.errors import EmbedderError, InvalidValue, MemoryError_
from memory.storage.connection import select_in

OVERSAMPLE = 4
MIN_CANDIDATES = 200


def binary_codes(matrix: Vectors) -> np.ndarray:
    """1 bit per dimension (x > 0), packed little-endian: the same bytes as vec_quantize_binary."""
    return np.packbits(np.asarray(matrix) > 0, axis=-1, bitorder="little")


class _Codes:
    """Binary codes of every stored vector, column-wise as uint64 words for a fast hamming scan."""

    def __init__(self, version: str, max_rowid: int, rowids: np.ndarray, codes: np.ndarray) -> None:
        self.version = version
        self.max_rowid = max_rowid
        self.rowids = rowids
        self.columns = [np.ascontiguousarray(col) for col in codes.view(np.uint64).T] if len(rowids) else []

    def extend(self, max_rowid: int, rowids: np.ndarray, codes: np.ndarray) -> None:
        self.max_rowid = max_rowid
        if not len(rowids):
            return
        words = codes.view(np.uint64).T
        if self.columns:
            self.columns = [np.concatenate([old, new]) for old, new in zip(self.columns, words, strict=True)]
        else:
            self.columns = [np.ascontiguousarray(col) for col in words]
        self.rowids = np.concatenate([self.rowids, rowids])

    def nearest(self, query_code: np.ndarray, count: int) -> np.ndarray:
        """Rowids of the ``count`` codes nearest to ``query_code`` by hamming distance."""
        if not len(self.rowids):
            return self.rowids
        words = np.ascontiguousarray(query_code).view(np.uint64)
        distance = np.bitwise_count(self.columns[0] ^ words[0]).astype(np.uint16)
        for column, word in zip(self.columns[1:], words[1:], strict=True):
            distance += np.bitwise_count(column ^ word)
        if count >= len(distance):
            return self.rowids
        # The smallest distance with at least ``count`` codes at or under it, from a histogram of
        # the 0..dim distances: at 1M codes 2 ms, where a partition of all of them took 7.6 ms.
        at_or_under = np.cumsum(np.bincount(distance, minlength=len(self.columns) * 64 + 1))
        threshold = int(np.searchsorted(at_or_under, count))
        chosen = np.flatnonzero(distance <= threshold)
        if len(chosen) > 2 * count:  # many ties at the threshold: keep the nearest ``count`` of them
            chosen = chosen[np.argpartition(distance[chosen], count)[:count]]
        return self.rowids[chosen]


def _slug(embedder_id: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", embedder_id.lower()).strip("_")
    if not slug:
        raise InvalidValue(f"embedder id {embedder_id!r} has no usable characters")
    return slug[:50]


def float_table_of(embedder_id: str) -> str:
    """The table of ``embedder_id``'s float vectors (by crystal rowid)."""
    return f"vecf_{_slug(embedder_id)}"


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
        self.float_table = float_table_of(embedder_id)
        self.version_key = f"vectors_version:{self.float_table}"
        self._codes: _Codes | None = None
        # One load at a time: a search during the start's warm-up waits for it instead of reading
        # every code a second time (48 MB at 1M crystals).
        self._loading = asyncio.Lock()

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
        if not rows:
            return
        async with db.execute(f"SELECT coalesce(max(rowid), 0) FROM {self.float_table}") as cursor:
            highest = int((await cursor.fetchone() or (0,))[0])
        if min(rowid for rowid, _ in rows) <= highest:
            # Not a plain append: readers must reload their codes (delete bumps the version).
            await self.delete(db, [rowid for rowid, _ in rows])
        blobs = [(rowid, vector_blob(vector)) for rowid, vector in rows]
        await db.executemany(f"INSERT INTO {self.float_table} (rowid, embedding) VALUES (?, ?)", blobs)
        await db.executemany(
            f"INSERT INTO {self.bit_table} (rowid, embedding) VALUES (?, vec_quantize_binary(vec_f32(?)))", blobs
        )

    async def delete(self, db: aiosqlite.Connection, rowids: Sequence[int]) -> None:
        """Remove vectors (inside a write transaction: the version bump must commit with them)."""
        if not rowids:
            return
        params = [(rowid,) for rowid in rowids]
        await db.executemany(f"DELETE FROM {self.bit_table} WHERE rowid = ?", params)
        await db.executemany(f"DELETE FROM {self.float_table} WHERE rowid = ?", params)
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (self.version_key,),
        )

    async def count(self, db: aiosqlite.Connection) -> int:
        async with db.execute(f"SELECT count(*) FROM {self.float_table}") as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def warm(self, reader: aiosqlite.Connection) -> int:
        """Load the binary codes now rather than at the first search (3.9 s at 1M crystals); how many."""
        return len((await self._current_codes(reader)).rowids)

    async def _current_codes(self, reader: aiosqlite.Connection) -> _Codes:
        async with self._loading:
            return await self._load_codes(reader)

    async def _load_codes(self, reader: aiosqlite.Connection) -> _Codes:
        """The in-memory codes, brought up to date with the database (version and size read at once)."""
        async with reader.execute(
            f"SELECT (SELECT value FROM meta WHERE key = ?), (SELECT coalesce(max(rowid), 0) FROM {self.float_table})",
            (self.version_key,),
        ) as cursor:
            row = await cursor.fetchone()
        version, highest = (str(row[0]), int(row[1])) if row else ("None", 0)
        codes = self._codes
        if codes is None or codes.version != version:
            async with reader.execute(
                f"SELECT rowid, embedding FROM {self.bit_table} WHERE rowid <= ?", (highest,)
            ) as cursor:
                rows = list(await cursor.fetchall())
            rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            packed = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint8).reshape(len(rows), self.dim // 8)
            codes = self._codes = _Codes(version, highest, rowids, packed)
        elif highest > codes.max_rowid:
            async with reader.execute(
                f"SELECT rowid, embedding FROM {self.float_table} WHERE rowid > ? AND rowid <= ? ORDER BY rowid",
                (codes.max_rowid, highest),
            ) as cursor:
                rows = list(await cursor.fetchall())
            rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            floats = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), self.dim)
            codes.extend(highest, rowids, binary_codes(floats))
        return codes

    async def knn(self, reader: aiosqlite.Connection, query: Vectors, k: int) -> list[tuple[int, float]]:
        """(rowid, cosine similarity) of the k nearest vectors, nearest first."""
        codes = await self._current_codes(reader)
        # The scan is numpy over every code (~12 ms at 1M): off the event loop, beside the keyword leg.
        nearest = await asyncio.to_thread(codes.nearest, binary_codes(query), max(k * OVERSAMPLE, MIN_CANDIDATES))
        rowids = [int(r) for r in nearest]
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

    async def vectors_of(self, db: aiosqlite.Connection, rowids: Sequence[int]) -> dict[int, np.ndarray]:
        """The stored float vectors of ``rowids`` that have one in this space."""
        rows = await select_in(
            db, f"SELECT rowid, embedding FROM {self.float_table} WHERE rowid IN ({{marks}})", rowids
        )
        return {int(rowid): np.frombuffer(blob, dtype=np.float32) for rowid, blob in rows}


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


async def delete_from_old_space(db: aiosqlite.Connection, old_embedder_id: str, rowid: int) -> None:
    """Remove a re-embedded row from its old space, if that space's tables still exist."""
    try:
        old = VectorIndex(old_embedder_id, 8)
    except MemoryError_:
        return
    async with db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (old.float_table,)) as cursor:
        exists = await cursor.fetchone()
    if exists:
        await old.delete(db, [rowid])
