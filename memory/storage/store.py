"""The Knowledge Crystal store: one SQLite file (WAL), one writer, read-only readers.

It persists rows; it does not decide them. A new crystal reaches it only as a row the intake
admitted (``Admitted``, ``Restated``; a restored export's ``Readmitted``): ``memory.intake`` types
it, classifies it, stamps it with the hormones and curiosity and applies the authority table, so
nothing the store writes skipped those. Writes are one transaction per logical change (``BEGIN
IMMEDIATE``), durable before they return, and every lifecycle transition leaves an audit row. The
same text is never stored or embedded twice (content hash). Crystals are
stored first and embedded by ``embed_backlog`` (bulk paths: ``memory.storage.embedding``) or at
once (``write`` with a vector): a crash between the two leaves a row the backlog embeds later. The steps after
embedding (the ``on_embedded`` hook) are owed from the vectors' transaction until done
(``memory.storage.after_embedding``)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Self

import aiosqlite
import sqlean

from ground.clock import Clock, wall_clock_ms
from memory.embedders.base import Embedder, Vectors
from memory.errors import CrystalNotFound, StoreError
from memory.model import CallerScope, Crystal, Lifecycle, NewCrystal
from memory.sensitivity import is_visible
from memory.storage import after_embedding, embedding
from memory.storage.access import AccessCounter, count_accesses
from memory.storage.connection import close_connections, is_transient_lock, open_connection, sync_wal
from memory.storage.counts import crystal_counts
from memory.storage.migrations import SchemaSet, migrate_all
from memory.storage.private_files import private_dir, private_file
from memory.storage.row_writes import (
    can_transition,
    crystal_any,
    crystal_by_hash,
    delete_rows,
    ids_by_hash,
    insert_rows,
    revive,
    rowid_of,
    said_again,
    said_again_in_batch,
    write_transitions,
)
from memory.storage.rows import SELECT_COLUMNS, crystal_from_row, insert_params, new_crystal_id, prepare_batch
from memory.storage.schema import MEMORY_SCHEMA, SCHEMA_VERSION
from memory.storage.store_types import (
    Admitted,
    BulkResult,
    CuriositySource,
    HormoneSource,
    LinkSettings,
    Progress,
    Remembered,
    Restated,
)
from memory.storage.vectors import VectorIndex

_log = logging.getLogger("memory.store")

#: Called after a crystal is embedded, with the store, its id and its vector: how the graph
#: (``memory.graph.auto_link``) links it to its neighbours without the store importing the graph.
EmbeddedHook = Callable[["MemoryStore", str, Vectors], Awaitable[int]]

__all__ = ["BulkResult", "EmbeddedHook", "HormoneSource", "LinkSettings", "MemoryStore", "Progress", "Remembered"]


#: Crystals per bulk transaction. A commit writes each page it dirtied to the WAL, and the random
#: content-hash keys dirty most of their index: 100K crystals wrote 530 MB of WAL in 1,000-row
#: batches, 197 MB in 5,000-row ones (ingest 1.3x faster). A crash loses at most one batch.
BULK_BATCH = 5_000
#: During a bulk import the WAL folds into the file (a sync) every 64 MiB, not every 4 MiB, which a
#: 5,000-row batch crossed at each commit (ingest 1.1-1.3x faster at 100K); it checkpoints at the end.
BULK_WAL_AUTOCHECKPOINT_PAGES = 16_384
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 1_000


class MemoryStore:
    """Open with ``await MemoryStore.open(path, embedder)``; always ``await store.close()``."""

    def __init__(
        self,
        path: Path,
        writer: aiosqlite.Connection,
        readers: list[aiosqlite.Connection],
        embedder: Embedder,
        now_ms: Clock,
        links: LinkSettings,
        on_embedded: EmbeddedHook | None = None,
    ) -> None:
        self.path = path
        self.writer = writer
        self._readers = readers
        self._reader_cycle = itertools.cycle(readers)
        self.embedder = embedder
        self.now_ms = now_ms
        self.links = links
        self._on_embedded = on_embedded
        self.vectors = VectorIndex(embedder.id, embedder.dim)
        self._write_lock = asyncio.Lock()
        self._closed = False
        # Kept beside the store for the intake and search, never called by it. Set by ``Endocrine.attach``:
        # the intake stamps new crystals with the hormonal state, search is modulated by it.
        self.hormone_source: HormoneSource | None = None
        #: Set by ``Curiosity.attach``: the intake scores new crystals and closes the gaps they fill,
        #: search records empty searches.
        self.curiosity: CuriositySource | None = None
        self._accesses = AccessCounter(self.touch)  # searches record, a flusher writes off their latency path

    @classmethod
    async def open(
        cls,
        path: Path,
        embedder: Embedder,
        *,
        now_ms: Clock = wall_clock_ms,
        links: LinkSettings | None = None,
        on_embedded: EmbeddedHook | None = None,
        readers: int = 2,
        schemas: Sequence[SchemaSet] = (),
    ) -> Self:
        """Open (creating and migrating as needed) the database at ``path``, with ``schemas``: other
        packages' tables in the file. ``on_embedded`` (linking, supersession) runs after each embedding."""
        private_dir(path.parent)
        private_file(path)
        writer = await open_connection(path)
        opened: list[aiosqlite.Connection] = [writer]
        try:
            await migrate_all(writer, (MEMORY_SCHEMA, *schemas))
            await VectorIndex(embedder.id, embedder.dim).ensure(writer)
            await writer.execute(
                "INSERT INTO meta (key, value) VALUES ('active_embedder', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (embedder.id,),
            )
            reader_conns = []
            for _ in range(readers):
                conn = await open_connection(path, readonly=True)
                opened.append(conn)
                reader_conns.append(conn)
        except BaseException:
            for conn in opened:
                await conn.close()
            raise
        return cls(path, writer, reader_conns, embedder, now_ms, links or LinkSettings(), on_embedded)

    async def close(self) -> None:
        """Flush recorded accesses, checkpoint, close every connection (each, even if the checkpoint
        fails: one left open keeps its thread and the process alive, issue 32's hang on Ctrl-C)."""
        if self._closed:
            return
        await self._accesses.close()
        self._closed = True
        async with self._write_lock:
            await close_connections(self._readers, self.writer)

    def reader(self) -> aiosqlite.Connection:
        if self._closed:
            raise StoreError("the memory store is closed")
        return next(self._reader_cycle)

    @asynccontextmanager
    async def transaction(self, *, durable: bool = False) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction on the single writer; rolled back on any error. ``durable``: on disk
        before it returns, power loss included (``connection.sync_wal``), as a record must be that
        comes before a step outside the file (a chain transaction)."""
        if self._closed:
            raise StoreError("the memory store is closed")
        async with self._write_lock:
            await self.writer.execute("BEGIN IMMEDIATE")
            try:
                yield self.writer
            except BaseException:
                await self.writer.execute("ROLLBACK")
                raise
            await self.writer.execute("COMMIT")
            if durable:
                await sync_wal(self.path)

    # --- writes -------------------------------------------------------------------------

    async def restate(self, row: Restated) -> Crystal | None:
        """``row``'s text said again, if the store holds it and it is not forgotten: the stored crystal,
        taken on by the new speaker when it stands higher (``row_writes.said_again``). None: it is not
        here, or forgotten (then the intake admits it in full and ``write`` brings it back)."""
        async with self.transaction() as db:
            existing = await crystal_by_hash(db, row.content_hash)
            if existing is None or existing.lifecycle is Lifecycle.EXPIRED:
                return None
            await said_again(db, existing, row.new, self.now_ms(), revived=False)
            return await crystal_any(db, existing.id)

    async def write(self, row: Admitted, vector: Vectors | None = None) -> tuple[str, bool]:
        """Store one admitted crystal with its ``vector`` (``crystal_vectors``' one row; None: the backlog
        embeds it): (its id, created). Not created: the same text was stored meanwhile, and ``row`` said it again."""
        if not isinstance(row, Admitted):  # the intake's rows only: a bare NewCrystal is refused
            raise StoreError(f"the store writes rows the intake admitted, not {type(row).__name__}")
        now = self.now_ms()
        async with self.transaction() as db:
            existing = await crystal_by_hash(db, row.content_hash)  # checked again under the write lock
            if existing is not None and existing.lifecycle is not Lifecycle.EXPIRED:
                await said_again(db, existing, row.new, now, revived=False)
                return existing.id, False
            if existing is not None:
                crystal_id = existing.id
                await revive(db, existing, row.new, now)
            else:
                crystal_id = new_crystal_id(now)
                await insert_rows(
                    db, [insert_params(row, crystal_id=crystal_id, now_ms=now)], [(crystal_id, row.new)], now
                )
            if vector is not None:
                embedded = [(await rowid_of(db, crystal_id), crystal_id, vector[0])]
                owe = self._on_embedded is not None  # the steps after embedding, owed until they are done
                await embedding.store_vectors(self.embedder.id, self.vectors, db, embedded, {}, owe=owe)
        if vector is not None and self._on_embedded is not None:
            await after_embedding.pay(self, self._on_embedded, embedded)
        return crystal_id, True

    async def write_many(self, rows: Sequence[Admitted]) -> tuple[list[str], int]:
        """Store a batch of admitted crystals in one transaction, unembedded: (the id of each, in order,
        a duplicate the stored one's; how many were created). A text stored before is said again."""
        if not all(isinstance(r, Admitted) for r in rows):
            raise StoreError("the store writes rows the intake admitted, not bare crystals")
        prepared = prepare_batch(rows, self.now_ms())
        async with self.transaction() as db:
            known = await ids_by_hash(db, prepared.hashes)
            await said_again_in_batch(
                db, known, list(zip(prepared.hashes, prepared.items, strict=True)), prepared.now_ms
            )
            fresh: list[tuple[Any, ...]] = []
            fresh_rows: list[tuple[str, NewCrystal]] = []
            for chash, new, params in zip(prepared.hashes, prepared.items, prepared.params, strict=True):
                if chash not in known:
                    known[chash] = params[0]
                    fresh.append(params)
                    fresh_rows.append((params[0], new))
            await insert_rows(db, fresh, fresh_rows, prepared.now_ms)
        return [known[h] for h in prepared.hashes], len(fresh)

    @asynccontextmanager
    async def bulk_writes(self) -> AsyncIterator[None]:
        """Many ``write_many`` batches in a row: the WAL folds into the file less often meanwhile."""
        await self.writer.execute(f"PRAGMA wal_autocheckpoint = {BULK_WAL_AUTOCHECKPOINT_PAGES}")
        try:
            yield
        finally:
            await self.writer.execute(f"PRAGMA wal_autocheckpoint = {SQLITE_WAL_AUTOCHECKPOINT_PAGES}")

    async def checkpoint(self, *, truncate: bool = False) -> bool:
        """Fold the WAL into the file; ``truncate``: cut it to nothing. False: a reader kept frames, or
        a read still open on the writer held it off (the next checkpoint folds them)."""
        mode = "TRUNCATE" if truncate else "PASSIVE"
        async with self._write_lock:
            try:
                rows = await self.writer.execute_fetchall(f"PRAGMA wal_checkpoint({mode})")
            except sqlean.OperationalError as exc:
                if not is_transient_lock(exc):
                    raise
                return False  # a read still open on the writer: the next checkpoint folds it
        return bool(rows) and int(next(iter(rows))[0]) == 0

    async def warm_vectors(self) -> int:
        """Load the vector index's codes before the first search needs them; how many there are."""
        try:
            return await self.vectors.warm(self.reader())
        except sqlean.Error as exc:
            raise StoreError(f"could not load the vector codes: {exc}") from exc

    async def embed_backlog(
        self, *, batch_size: int = 64, limit: int | None = None, progress: Progress | None = None
    ) -> int:
        """Embed every live crystal not yet in the active embedder's space; resumable. Returns how many."""
        return await embedding.embed_backlog(
            self, self._on_embedded, batch_size=batch_size, limit=limit, progress=progress
        )

    async def embed_these(self, ids: Sequence[str]) -> int:
        """Embed those of ``ids`` not yet embedded, now, with the steps after embedding. Returns how many."""
        return await embedding.embed_these(self, self._on_embedded, ids)

    async def backlog_size(self) -> int:
        """How many crystals wait to be embedded (``embed_backlog``)."""
        return await embedding.backlog_size(self)

    async def transition(self, crystal_id: str, target: Lifecycle, *, reason: str, actor: str) -> Crystal:
        """Move a crystal to ``target`` if the lifecycle allows it, with its audit row."""
        async with self.transaction() as db:
            crystal = await crystal_any(db, crystal_id)
            if not can_transition(crystal.lifecycle, target):
                raise StoreError(f"crystal {crystal_id} cannot go from {crystal.lifecycle} to {target}")
            await write_transitions(db, [(crystal_id, crystal.lifecycle, target, reason)], actor, self.now_ms())
        return await crystal_any(self.reader(), crystal_id)

    async def forget(self, crystal_id: str, *, actor: str = "local", reason: str = "forgotten") -> Crystal:
        """Soft delete: the crystal becomes expired (never returned again) and the audit log says why."""
        return await self.transition(crystal_id, Lifecycle.EXPIRED, reason=reason, actor=actor)

    async def delete_physically(self, db: aiosqlite.Connection, rows: Sequence[tuple[int, str]]) -> None:
        """Delete (rowid, id) crystals and all that hangs on them, in the caller's transaction (``delete_rows``)."""
        await delete_rows(db, self.vectors, rows)

    def record_access(self, crystal_ids: Sequence[str]) -> None:
        """Count an access of each crystal, written shortly after (``memory.storage.access``)."""
        self._accesses.record(crystal_ids)

    async def flush_access(self) -> None:
        """Write every recorded access now."""
        await self._accesses.flush()

    async def touch(self, crystal_ids: Sequence[str] | Counter[str]) -> None:
        """Count accesses (a Counter counts repeats); a generated crystal becomes activated."""
        counts = crystal_ids if isinstance(crystal_ids, Counter) else Counter(crystal_ids)
        if not counts:
            return
        async with self.transaction() as db:
            await count_accesses(db, counts, self.now_ms())

    # --- reads --------------------------------------------------------------------------

    async def get(
        self, crystal_id: str, *, caller: CallerScope = CallerScope.LOCAL, include_archived: bool = True
    ) -> Crystal:
        """The crystal if the caller may see it; ``CrystalNotFound`` otherwise (existence is not leaked)."""
        crystal = await crystal_any(self.reader(), crystal_id)
        if not is_visible(crystal, caller, self.now_ms(), include_archived=include_archived):
            raise CrystalNotFound(crystal_id)
        return crystal

    async def iter_live(self, *, batch: int = 500) -> AsyncIterator[Crystal]:
        """Every crystal not expired (archived ones too: they carry provenance), in storage order."""
        last = 0
        while True:
            async with self.reader().execute(
                f"SELECT c.rowid, {SELECT_COLUMNS} FROM crystals c WHERE c.rowid > ? AND c.lifecycle != 'expired' "
                "ORDER BY c.rowid LIMIT ?",
                (last, batch),
            ) as cursor:
                rows = list(await cursor.fetchall())
            if not rows:
                return
            for row in rows:
                yield crystal_from_row(row[1:])
            last = int(rows[-1][0])

    async def get_many_by_rowid(self, rowids: Sequence[int]) -> dict[int, Crystal]:
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        async with self.reader().execute(
            f"SELECT c.rowid, {SELECT_COLUMNS} FROM crystals c WHERE c.rowid IN ({marks})", tuple(rowids)
        ) as cursor:
            return {int(r[0]): crystal_from_row(r[1:]) for r in await cursor.fetchall()}

    async def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": str(self.path), "embedder": self.embedder.id}
        out |= await crystal_counts(self.reader())
        out["embedding_backlog"] = await self.backlog_size()
        out["schema_version"] = SCHEMA_VERSION
        out["file_bytes"] = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return out

    async def get_meta(self, key: str) -> str | None:
        async with self.reader().execute("SELECT value FROM meta WHERE key = ?", (key,)) as cursor:
            row = await cursor.fetchone()
        return str(row[0]) if row else None

    async def set_meta(self, key: str, value: str) -> None:
        async with self.transaction() as db:
            await db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
