"""The steps a crystal owes once it is embedded (the store's embedded hook: its type decided again by
meaning, its links, supersession), kept in ``after_embedding_owed`` until they are done.

The vectors and what they owe are written in one transaction, and a crystal's debt is cleared once
its steps ran. So a step that fails part way through a batch, or a ``kill -9``, leaves the rest of
the batch owed, not lost: the next embedding round pays it first. A crystal whose steps failed
``MAX_ATTEMPTS`` times is set aside with its error, so one bad crystal cannot stop the embedder. The
steps are idempotent (links ``INSERT OR IGNORE``, a supersession keeps its first superseder, a
"maybe outdated" note is written once), so a kill between a step and its clearing repeats nothing.
A crystal forgotten or erased while its steps wait (a forget that came by sync before the loop got
to them) owes none: its debt is cleared, as one whose vector is gone."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar

import aiosqlite

from ground import failpoints
from memory.embedders.base import Vectors
from memory.errors import CrystalNotFound
from memory.storage.connection import is_transient_lock
from memory.storage.vectors import VectorIndex

_log = logging.getLogger("memory.after_embedding")
#: Failures (a lock that clears by itself not counted) before a crystal's steps are set aside.
MAX_ATTEMPTS = 3
_BATCH = 64


class _Store(Protocol):
    """What of the store the debt needs (the store imports this module, not the other way)."""

    @property
    def vectors(self) -> VectorIndex: ...
    def reader(self) -> aiosqlite.Connection: ...
    def transaction(self, *, durable: bool = False) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...


S = TypeVar("S", bound=_Store)


async def owe(db: aiosqlite.Connection, rows: Sequence[tuple[int, str]]) -> None:
    """Record (rowid, crystal id) as owing its steps, in the transaction that stores its vector."""
    await db.executemany("INSERT OR REPLACE INTO after_embedding_owed (rowid, crystal_id) VALUES (?, ?)", rows)


async def pay(
    store: S, hook: Callable[[S, str, Vectors], Awaitable[int]], rows: Sequence[tuple[int, str, Vectors]]
) -> None:
    """Run ``hook`` for each (rowid, crystal id, vector), clearing each debt once its steps ran, or
    once the crystal is found no longer there to take them. A failure is recorded against its crystal
    and raised: the rest stay owed."""
    for rowid, crystal_id, vector in rows:
        try:
            await hook(store, crystal_id, vector)
        except CrystalNotFound as exc:
            if exc.crystal_id != crystal_id:  # another crystal the steps needed: a failure of these steps
                await _failed(store, rowid, crystal_id, exc)
                raise
            _log.debug("after-embedding steps of %s let go: it was forgotten or erased", crystal_id)
        except Exception as exc:
            if not is_transient_lock(exc):
                await _failed(store, rowid, crystal_id, exc)
            raise
        failpoints.check("embed:after-steps")  # a kill here: the steps ran, their debt not yet cleared
        async with store.transaction() as db:
            await db.execute("DELETE FROM after_embedding_owed WHERE rowid = ?", (rowid,))


async def pay_owed(store: S, hook: Callable[[S, str, Vectors], Awaitable[int]]) -> int:
    """Run the steps a failure or a kill left owed, oldest first; how many crystals were paid for."""
    paid, last = 0, 0
    while True:
        rows = list(
            await store.reader().execute_fetchall(
                "SELECT rowid, crystal_id FROM after_embedding_owed WHERE attempts < ? AND rowid > ? "
                "ORDER BY rowid LIMIT ?",
                (MAX_ATTEMPTS, last, _BATCH),
            )
        )
        if not rows:
            return paid
        last = int(rows[-1][0])
        vectors = await store.vectors.vectors_of(store.reader(), [int(r[0]) for r in rows])
        # No vector in this space: deleted, or to be embedded again (which owes the steps anew).
        gone = [(int(r[0]),) for r in rows if int(r[0]) not in vectors]
        if gone:
            async with store.transaction() as db:
                await db.executemany("DELETE FROM after_embedding_owed WHERE rowid = ?", gone)
        owed = [(int(r[0]), str(r[1]), vectors[int(r[0])]) for r in rows if int(r[0]) in vectors]
        await pay(store, hook, owed)
        paid += len(owed)


async def owed_count(store: _Store) -> tuple[int, int]:
    """(still owed, set aside after ``MAX_ATTEMPTS`` failures)."""
    rows = await store.reader().execute_fetchall(
        "SELECT count(*) FILTER (WHERE attempts < ?), count(*) FILTER (WHERE attempts >= ?) FROM after_embedding_owed",
        (MAX_ATTEMPTS, MAX_ATTEMPTS),
    )
    row = next(iter(rows))
    return int(row[0]), int(row[1])


async def _failed(store: _Store, rowid: int, crystal_id: str, exc: Exception) -> None:
    async with store.transaction() as db:
        cursor = await db.execute(
            "UPDATE after_embedding_owed SET attempts = attempts + 1, error = ? WHERE rowid = ? RETURNING attempts",
            (f"{type(exc).__name__}: {exc}"[:500], rowid),
        )
        row = await cursor.fetchone()
    if row is not None and int(row[0]) >= MAX_ATTEMPTS:
        _log.warning("after-embedding steps of %s set aside after %d failures: %s", crystal_id, row[0], exc)
