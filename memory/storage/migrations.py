"""The migration runner: applies ``memory.storage.schema.MIGRATIONS`` in order, each in its own transaction."""

from __future__ import annotations

import sqlite3

import aiosqlite

from memory.errors import SchemaTooNew
from memory.storage.schema import MIGRATIONS, SCHEMA_VERSION


async def migrate(db: aiosqlite.Connection) -> None:
    """Bring the database to ``SCHEMA_VERSION``, one migration per transaction; ``SchemaTooNew`` when a
    newer release made it."""
    await db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    async with db.execute("SELECT value FROM meta WHERE key = 'schema_version'") as cursor:
        row = await cursor.fetchone()
    version = int(row[0]) if row else 0
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(version, SCHEMA_VERSION)
    for target in range(version, SCHEMA_VERSION):
        # executescript commits on its own; run each migration's statements in one explicit transaction instead.
        await db.execute("BEGIN IMMEDIATE")
        try:
            for statement in split_sql(MIGRATIONS[target]):
                await db.execute(statement)
            await db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (str(target + 1),),
            )
        except BaseException:
            await db.execute("ROLLBACK")
            raise
        await db.execute("COMMIT")


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
