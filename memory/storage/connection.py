"""Opening the memory database: SQLite with FTS5 and sqlite-vec, through aiosqlite.

The machine's CPython may be built without loadable extensions, so we use
``sqlean.py`` (SQLite 3.50 with extension loading) and load sqlite-vec into it.
One writer connection (``BEGIN IMMEDIATE`` transactions) and separate read-only
connections: WAL lets them read while the writer writes.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import aiosqlite
import sqlean
import sqlite_vec

_log = logging.getLogger("memory.store")

BUSY_TIMEOUT_MS = 10_000
#: Below SQLite's default limit of bound parameters per statement, with room to spare.
IN_CHUNK = 900


def _bind_none(value: None) -> None:
    return value


# Binding None goes through sqlite3's adaptation protocol: with no adapter registered for it, each
# None costs a failed attribute lookup (1.4 µs here against 0.06 µs for an int). A crystal's row binds
# about 16 of them, so this one registration took 100K-crystal ingest from ~30 to ~10 µs a row of
# INSERT (bench memory_store). It is process-wide for sqlean, which only this package uses.
sqlean.register_adapter(type(None), _bind_none)


async def select_in(db: aiosqlite.Connection, sql: str, values: Iterable[Any], *, repeat: int = 1) -> list[Any]:
    """Rows of ``sql`` (with ``repeat`` times ``IN ({marks})``, each the same values) for every
    distinct value, in chunks."""
    unique = list(dict.fromkeys(values))
    rows: list[Any] = []
    for start in range(0, len(unique), IN_CHUNK):
        chunk = unique[start : start + IN_CHUNK]
        async with db.execute(sql.format(marks=",".join("?" * len(chunk))), chunk * repeat) as cursor:
            rows.extend(await cursor.fetchall())
    return rows


def _connect(path: Path, *, readonly: bool) -> Any:
    uri = f"file:{path}?mode=ro" if readonly else f"file:{path}?mode=rwc"
    conn = sqlean.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.enable_load_extension(False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    if not readonly:
        conn.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a commit survives a process crash; only a power loss can undo the last ones.
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA cache_size = -65536")  # 64 MiB page cache
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


async def open_connection(path: Path, *, readonly: bool = False) -> aiosqlite.Connection:
    """An aiosqlite connection (its own thread) with sqlite-vec loaded. Close it: an open one keeps Python alive."""
    conn = aiosqlite.Connection(lambda: _connect(path, readonly=readonly), iter_chunk_size=64)
    await conn
    return conn


async def sync_wal(db_path: Path) -> None:
    """Make every transaction committed to ``db_path`` durable now. The writer runs
    ``synchronous = NORMAL``: a commit survives a killed process at once, a power loss only once
    the write-ahead log is synced (which a checkpoint does later); this syncs it."""
    wal = db_path.with_name(db_path.name + "-wal")

    def sync() -> None:
        try:
            fd = os.open(wal, os.O_RDONLY)
        except FileNotFoundError:  # nothing written since the last checkpoint truncated it
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    await asyncio.to_thread(sync)


async def close_connections(readers: Sequence[aiosqlite.Connection], writer: aiosqlite.Connection) -> None:
    """Close a store's connections, each even if another fails (one left open keeps its thread and
    the process alive, issue 32's hang on Ctrl-C), folding the WAL into the file on the way.

    The readers first: a read whose caller was cancelled (a search whose embedder failed, a client
    gone) still runs in its reader's thread, and aiosqlite keeps its cursor until that thread's next
    call, holding a read transaction the checkpoint would wait on for the whole busy timeout (10 s)
    and then give up."""
    try:
        for conn in readers:
            await conn.close()
    finally:
        try:  # Ctrl-C can leave "database table is locked": the next open folds the WAL
            rows = await writer.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
            if any(row[0] for row in rows):  # busy: a reader held on past the busy timeout
                _log.warning("memory store closed with the WAL not folded (a read was still open)")
        except sqlean.Error as exc:
            # A statement cut off by Ctrl-C leaves "database table is locked" for a moment: nothing is
            # wrong (the next open folds the WAL), and a warning was a stray line under the import's
            # "stopped:" report. Any other error is worth the warning.
            log = _log.debug if is_transient_lock(exc) else _log.warning
            log("memory store closed without a checkpoint: %s", exc)
        finally:
            await writer.close()


def is_transient_lock(exc: BaseException) -> bool:
    """An SQLite lock that clears by itself ("database is locked": another connection past the busy
    timeout; "database table is locked": another statement of the same connection still reading):
    the transaction it hit rolled back whole, and the work can be tried again."""
    return isinstance(exc, sqlean.OperationalError) and str(exc) in ("database is locked", "database table is locked")
