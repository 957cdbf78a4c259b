"""Embedding what the store holds: the backlog of crystals not yet in the active embedder's space,
in batches, and the vectors a write or a batch stores (with the steps they owe afterwards,
``memory.storage.after_embedding``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import aiosqlite

from memory.embedders.base import Embedder, Vectors, crystal_vectors
from memory.storage import after_embedding
from memory.storage.store_types import Progress
from memory.storage.vectors import VectorIndex, delete_from_old_space

#: A crystal to embed: live, not held, and not yet in the active embedder's space.
UNEMBEDDED = "(embedded_with IS NULL OR embedded_with != ?) AND lifecycle != 'expired' AND quarantined = 0"


class _Store(Protocol):
    """What of the store embedding needs (the store imports this module, not the other way)."""

    @property
    def vectors(self) -> VectorIndex: ...
    @property
    def embedder(self) -> Embedder: ...
    def reader(self) -> aiosqlite.Connection: ...
    def transaction(self, *, durable: bool = False) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...
    async def checkpoint(self, *, truncate: bool = False) -> bool: ...


Hook = Callable[[Any, str, Vectors], Awaitable[int]]


async def store_vectors(
    embedder_id: str,
    vectors: VectorIndex,
    db: aiosqlite.Connection,
    rows: list[tuple[int, str, Any]],
    previous: dict[int, str],
    *,
    owe: bool,
) -> None:
    """Store (rowid, crystal id, vector) rows in ``embedder_id``'s space inside the caller's
    transaction, dropping each from the space it was in before (``previous``: rowid -> space);
    ``owe``: the steps after embedding are owed until they are done."""
    await vectors.put(db, [(r[0], r[2]) for r in rows])
    await db.executemany("UPDATE crystals SET embedded_with = ? WHERE rowid = ?", [(embedder_id, r[0]) for r in rows])
    for rowid, old_id in previous.items():
        if old_id != embedder_id:
            await delete_from_old_space(db, old_id, rowid)
    if owe:
        await after_embedding.owe(db, [(r[0], r[1]) for r in rows])


async def embed_backlog(
    store: _Store, hook: Hook | None, *, batch_size: int, limit: int | None, progress: Progress | None
) -> int:
    """Embed every live crystal not yet in the active embedder's space, ``hook`` after each batch
    (first what a failure or a kill left owed); resumable. Returns how many."""
    done = 0
    if hook is not None:
        await after_embedding.pay_owed(store, hook)
    embedder = store.embedder
    while limit is None or done < limit:
        take = batch_size if limit is None else min(batch_size, limit - done)
        async with store.reader().execute(
            f"SELECT rowid, id, text, embedded_with, context FROM crystals WHERE {UNEMBEDDED} ORDER BY rowid LIMIT ?",
            (embedder.id, take),
        ) as cursor:
            rows = list(await cursor.fetchall())
        if not rows:
            break
        await _embed_rows(store, hook, rows)
        done += len(rows)
        if progress:
            progress(len(rows))
    if done:
        await store.checkpoint()
    return done


async def embed_these(store: _Store, hook: Hook | None, ids: Sequence[str]) -> int:
    """Embed those of ``ids`` not yet in the active embedder's space (a capture's own pieces, so a
    search right after it finds them by meaning), ``hook`` after them. Returns how many."""
    if not ids:
        return 0
    marks = ", ".join("?" * len(ids))
    async with store.reader().execute(
        f"SELECT rowid, id, text, embedded_with, context FROM crystals WHERE id IN ({marks}) AND {UNEMBEDDED} "
        "ORDER BY rowid",
        (*ids, store.embedder.id),
    ) as cursor:
        rows = list(await cursor.fetchall())
    return await _embed_rows(store, hook, rows) if rows else 0


async def _embed_rows(store: _Store, hook: Hook | None, rows: list[Any]) -> int:
    """Embed (rowid, id, text, embedded_with, context) rows; only those still unembedded when the
    vectors are written are stored (the daemon's backlog loop and a capture may reach one at once)."""
    embedder = store.embedder
    vectors = await asyncio.to_thread(crystal_vectors, embedder, [(r[2], r[4]) for r in rows])
    async with store.transaction() as db:
        marks = ", ".join("?" * len(rows))
        async with db.execute(
            f"SELECT rowid FROM crystals WHERE rowid IN ({marks}) AND {UNEMBEDDED}",
            (*[int(r[0]) for r in rows], embedder.id),
        ) as cursor:
            still = {int(r[0]) for r in await cursor.fetchall()}
        embedded = [(int(r[0]), str(r[1]), v) for r, v in zip(rows, vectors, strict=True) if int(r[0]) in still]
        previous = {int(r[0]): r[3] for r in rows if r[3] is not None and int(r[0]) in still}
        await store_vectors(embedder.id, store.vectors, db, embedded, previous, owe=hook is not None)
    if hook is not None and embedded:
        await after_embedding.pay(store, hook, embedded)
    return len(embedded)


async def backlog_size(store: _Store) -> int:
    """How many crystals wait to be embedded in the active embedder's space."""
    sql = f"SELECT count(*) FROM crystals WHERE {UNEMBEDDED}"
    async with store.reader().execute(sql, (store.embedder.id,)) as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0
