"""The marketplace's tables are its own set in the node's database: created beside the memory's,
adopted as older releases left them, and refused when a newer release migrated them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from marketplace.schema import MARKET_SCHEMA, MIGRATIONS
from memory.embedders.hashing import HashingEmbedder
from memory.errors import SchemaTooNew
from memory.intake.store import IntakeStore
from memory.storage.migrations import split_sql

MARKET_TABLES = {"skill_executions", "listings", "purchases", "sales", "bounties", "endorsements", "listings_fts"}


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as raw:
        return {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def meta(path: Path, key: str) -> str | None:
    with sqlite3.connect(path) as raw:
        row = raw.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


async def test_the_memory_alone_creates_none_of_the_market_tables(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    await (await IntakeStore.open(path, HashingEmbedder())).close()
    assert "crystals" in tables(path) and not MARKET_TABLES & tables(path)
    assert meta(path, MARKET_SCHEMA.version_key) is None
    # and the marketplace adds its set to that file later, at its own version
    await (await IntakeStore.open(path, HashingEmbedder(), schemas=(MARKET_SCHEMA,))).close()
    assert tables(path) >= MARKET_TABLES
    assert meta(path, MARKET_SCHEMA.version_key) == str(len(MIGRATIONS))


async def test_tables_an_older_release_made_are_adopted_where_they_stand_and_migrated_on(tmp_path: Path) -> None:
    """A file as the memory-v7 release left it: executions, listings, purchases and sales, no payment
    column, no word index. Its rows are kept, and the steps it lacked run."""
    path = tmp_path / "v7.db"
    await (await IntakeStore.open(path, HashingEmbedder())).close()
    with sqlite3.connect(path) as raw:
        for migration in MIGRATIONS[:3]:
            assert isinstance(migration, str)
            for statement in split_sql(migration):
                raw.execute(statement)
        raw.execute(
            "INSERT INTO purchases (purchase_id, seller, seller_peer, quote, state, updated_ms) "
            "VALUES ('ab', 'cd', 'peer', x'00', 'locked', 1)"
        )
        raw.execute(
            "INSERT INTO listings VALUES ('cd', 'skill', 1, 'h', 'Rotate logs', 'ops', 5, '0x1', 0, 0, 0, 1, x'00')"
        )
    await (await IntakeStore.open(path, HashingEmbedder(), schemas=(MARKET_SCHEMA,))).close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT state, payment FROM purchases").fetchall() == [("locked", "escrow")]
        assert raw.execute("SELECT stable_skill_id FROM listings_fts WHERE listings_fts MATCH 'rotate'").fetchall() == [
            ("skill",)
        ]
    assert meta(path, MARKET_SCHEMA.version_key) == str(len(MIGRATIONS))


async def test_market_tables_a_newer_release_migrated_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    await (await IntakeStore.open(path, HashingEmbedder(), schemas=(MARKET_SCHEMA,))).close()
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE meta SET value = '99' WHERE key = ?", (MARKET_SCHEMA.version_key,))
    with pytest.raises(SchemaTooNew, match="marketplace tables have schema version 99"):
        await IntakeStore.open(path, HashingEmbedder(), schemas=(MARKET_SCHEMA,))
    assert meta(path, MARKET_SCHEMA.version_key) == "99"  # nothing rewritten
