"""The migration runner: brings one named set of tables in the database to its newest version.

Several packages keep tables in the one SQLite file (the memory its crystals, the marketplace
its listings and purchases), and each owns its schema: a ``SchemaSet`` is one package's ordered
migrations, with its version kept under its own key in ``meta``. Each migration runs in its own
transaction, so a crash leaves the set at the last version it completed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import aiosqlite

from memory.errors import SchemaTooNew

#: A migration is SQL statements, or a function for a step whose SQL depends on what the file holds.
Migration = str | Callable[[aiosqlite.Connection], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SchemaSet:
    """One package's tables: ``migrations[n]`` takes the set from version n to n+1.

    ``adopt`` answers the version of a database that holds this set's tables but no version under
    ``version_key`` yet (tables an older release created under another set's migrations)."""

    name: str
    version_key: str
    migrations: Sequence[Migration]
    adopt: Callable[[aiosqlite.Connection], Awaitable[int]] | None = None

    @property
    def version(self) -> int:
        return len(self.migrations)


async def migrate(db: aiosqlite.Connection, schema: SchemaSet) -> None:
    """Bring ``schema`` to its newest version, one migration per transaction; ``SchemaTooNew`` when a
    newer release made it."""
    await db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    async with db.execute("SELECT value FROM meta WHERE key = ?", (schema.version_key,)) as cursor:
        row = await cursor.fetchone()
    adopted = await schema.adopt(db) if row is None and schema.adopt is not None else 0
    version = int(row[0]) if row is not None else adopted
    if version > schema.version:
        raise SchemaTooNew(version, schema.version, schema.name)
    for target in range(version, schema.version):
        # executescript commits on its own; run each migration's statements in one explicit transaction instead.
        await db.execute("BEGIN IMMEDIATE")
        try:
            step = schema.migrations[target]
            if isinstance(step, str):
                for statement in split_sql(step):
                    await db.execute(statement)
            else:
                await step(db)
            await _set_version(db, schema.version_key, target + 1)
        except BaseException:
            await db.execute("ROLLBACK")
            raise
        await db.execute("COMMIT")
    if row is None and version == schema.version:  # adopted as it stands: write the version down
        await _set_version(db, schema.version_key, version)
        await db.commit()


async def migrate_all(db: aiosqlite.Connection, schemas: Sequence[SchemaSet]) -> None:
    """Migrate each set in order (the memory's first: its steps were written when it held them all)."""
    for schema in schemas:
        await migrate(db, schema)


async def _set_version(db: aiosqlite.Connection, key: str, version: int) -> None:
    await db.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, str(version)),
    )


async def table_exists(db: aiosqlite.Connection, name: str) -> bool:
    async with db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)) as cursor:
        return await cursor.fetchone() is not None


async def column_exists(db: aiosqlite.Connection, table: str, column: str) -> bool:
    async with db.execute("SELECT 1 FROM pragma_table_info(?) WHERE name = ?", (table, column)) as cursor:
        return await cursor.fetchone() is not None


def split_sql(script: str) -> list[str]:
    """Split a migration into statements; triggers (BEGIN … END;) stay whole."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--") and not current.strip():
            continue
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
