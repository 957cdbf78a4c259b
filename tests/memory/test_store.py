"""The crystal store: persistence, dedup, lifecycle and audit, migrations, embedder changes."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlean

from memory.embedders.base import Vectors
from memory.embedders.hashing import HashingEmbedder
from memory.errors import CrystalNotFound, EmbedderError, SchemaTooNew, StoreError
from memory.intake.store import IntakeStore
from memory.model import Lifecycle, Lifespan, NewCrystal, Origin, SemanticType, Sensitivity, SkillVersion
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.storage.connection import is_transient_lock
from memory.storage.crystal_queries import audit_trail
from memory.storage.schema import SCHEMA_VERSION
from memory.storage.store import BULK_WAL_AUTOCHECKPOINT_PAGES, SQLITE_WAL_AUTOCHECKPOINT_PAGES
from tests.memory.conftest import DAY, T0, FakeClock


async def test_a_remembered_crystal_reads_back_with_every_field(store: IntakeStore) -> None:
    new = NewCrystal(
        "Deploy with `make release` after tagging",
        semantic_type=SemanticType.SKILL,
        origin=Origin.SKILL,
        source_path="notes/deploy.md",
        line_start=3,
        line_end=9,
        importance=0.8,
        emotional_valence=0.4,
        skill=SkillVersion("deploy-release", version=2, tags=("ops", "release"), category="devops"),
        created_at_ms=T0 - DAY,
    )
    got = (await store.remember(new)).crystal
    assert got.text == new.text
    assert (got.semantic_type, got.origin, got.lifecycle) == (SemanticType.SKILL, Origin.SKILL, Lifecycle.GENERATED)
    assert (got.source_path, got.line_start, got.line_end) == ("notes/deploy.md", 3, 9)
    assert got.skill == SkillVersion("deploy-release", version=2, tags=("ops", "release"), category="devops")
    assert (got.importance, got.emotional_valence, got.created_at_ms, got.stored_at_ms) == (0.8, 0.4, T0 - DAY, T0)
    assert got.embedded_with == "hashing-v1-384"
    assert await store.get(got.id) == got


async def test_the_same_text_is_stored_and_embedded_once(store: IntakeStore) -> None:
    first = await store.remember(NewCrystal("The wifi password changed on Monday"))
    again = await store.remember(NewCrystal("The  wifi password changed\non Monday"))  # whitespace differs only
    assert first.created and not again.created
    assert again.crystal.id == first.crystal.id
    bulk = await store.remember_many(
        [NewCrystal("The wifi password changed on Monday"), NewCrystal("new one"), NewCrystal("new one")]
    )
    assert (bulk.created, bulk.duplicates) == (1, 2)
    assert bulk.ids[0] == first.crystal.id and bulk.ids[1] == bulk.ids[2]
    stats = await store.stats()
    assert stats["total"] == 2
    assert await store.vectors.count(store.reader()) == 1  # the bulk one waits in the backlog
    assert await store.embed_backlog() == 1
    assert await store.embed_backlog() == 0


async def test_a_bulk_import_widens_the_wal_only_while_it_runs(store: IntakeStore) -> None:
    async def autocheckpoint() -> int:
        async with store.writer.execute("PRAGMA wal_autocheckpoint") as cursor:
            row = await cursor.fetchone()
        assert row is not None
        return int(row[0])

    assert await autocheckpoint() == SQLITE_WAL_AUTOCHECKPOINT_PAGES
    during: list[int] = []
    batches = asyncio.Queue[int]()

    async def watch() -> None:  # reads the setting between the first and the last batch
        await batches.get()
        during.append(await autocheckpoint())

    watcher = asyncio.create_task(watch())
    items = [NewCrystal(f"imported fact {i}") for i in range(30)]
    result = await store.remember_many(items, batch_size=10, progress=batches.put_nowait)
    await watcher
    assert result.created == 30
    assert during == [BULK_WAL_AUTOCHECKPOINT_PAGES]
    assert await autocheckpoint() == SQLITE_WAL_AUTOCHECKPOINT_PAGES

    def fail(done: int) -> None:
        raise RuntimeError("the import stopped")

    with pytest.raises(RuntimeError, match="stopped"):
        await store.remember_many([NewCrystal("one more"), NewCrystal("and another")], batch_size=1, progress=fail)
    assert await autocheckpoint() == SQLITE_WAL_AUTOCHECKPOINT_PAGES  # put back after a failure too


async def test_forget_is_a_soft_delete_with_an_audit_row(store: IntakeStore, clock: FakeClock) -> None:
    crystal = (await store.remember(NewCrystal("temporary thought"))).crystal
    clock.advance(1000)
    await store.forget(crystal.id, actor="agent", reason="user asked")
    with pytest.raises(CrystalNotFound):
        await store.get(crystal.id)
    trail = await audit_trail(store, crystal.id)
    assert trail == [
        (None, "generated", "created", "local", T0),
        ("generated", "expired", "user asked", "agent", T0 + 1000),
    ]
    async with store.reader().execute("SELECT count(*) FROM crystals") as cursor:
        assert await cursor.fetchone() == (1,)  # still there, physically


async def test_remembering_a_forgotten_text_revives_it(store: IntakeStore) -> None:
    crystal = (await store.remember(NewCrystal("revive me"))).crystal
    await store.forget(crystal.id)
    again = await store.remember(NewCrystal("revive me"))
    assert again.created and again.crystal.id == crystal.id
    assert again.crystal.lifecycle is Lifecycle.GENERATED
    assert [t[1] for t in await audit_trail(store, crystal.id)] == ["generated", "expired", "generated"]


async def test_disallowed_transition_is_refused_and_changes_nothing(store: IntakeStore) -> None:
    crystal = (await store.remember(NewCrystal("x marks"))).crystal
    await store.forget(crystal.id)
    with pytest.raises(StoreError, match="cannot go from expired to frozen"):
        await store.transition(crystal.id, Lifecycle.FROZEN, reason="pin", actor="t")
    assert len(await audit_trail(store, crystal.id)) == 2


async def test_ttl_crystals_disappear_when_their_time_is_up(store: IntakeStore, clock: FakeClock) -> None:
    crystal = (
        await store.remember(NewCrystal("meeting room is B2 today", lifespan=Lifespan.TTL, ttl_ms=3_600_000))
    ).crystal
    assert crystal.expires_at_ms == T0 + 3_600_000
    clock.advance(3_599_999)
    assert (await store.get(crystal.id)).id == crystal.id
    clock.advance(1)
    with pytest.raises(CrystalNotFound):
        await store.get(crystal.id)


async def test_sensitivity_is_classified_on_ingest_unless_given(store: IntakeStore) -> None:
    secret = (await store.remember(NewCrystal("my github token is ghp_" + "a1B2" * 9))).crystal
    personal = (await store.remember(NewCrystal("Reach Dana at dana@example.org"))).crystal
    plain = (await store.remember(NewCrystal("Bananas are berries"))).crystal
    forced = (await store.remember(NewCrystal("codename lighthouse", sensitivity=Sensitivity.CONFIDENTIAL))).crystal
    assert (secret.sensitivity, personal.sensitivity, plain.sensitivity, forced.sensitivity) == (
        Sensitivity.CONFIDENTIAL,
        Sensitivity.PERSONAL,
        Sensitivity.NORMAL,
        Sensitivity.CONFIDENTIAL,
    )


async def test_migrations_create_the_schema_from_an_empty_file_and_reopen(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "m.db"
    path.touch()
    store = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
    await store.remember(NewCrystal("survives a reopen"))
    await store.close()
    store = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
    try:
        assert (await store.stats())["total"] == 1
    finally:
        await store.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        raw.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    with pytest.raises(SchemaTooNew, match="upgrade bitterbot-node"):
        await IntakeStore.open(path, HashingEmbedder())


async def test_changing_the_embedder_re_embeds_into_a_new_space_without_mixing(
    tmp_path: Path, clock: FakeClock
) -> None:
    path = tmp_path / "m.db"
    old = await IntakeStore.open(path, HashingEmbedder(384), now_ms=clock)
    await old.remember_many([NewCrystal(f"fact number {i}") for i in range(50)])
    await old.embed_backlog()
    await old.close()
    new = await IntakeStore.open(path, HashingEmbedder(256), now_ms=clock)
    try:
        assert await new.backlog_size() == 50
        assert await new.embed_backlog(limit=20) == 20  # interrupted half way…
        assert await new.backlog_size() == 30
        assert await new.embed_backlog() == 30  # …and resumed
        from memory.storage.vectors import VectorIndex

        assert await VectorIndex("hashing-v1-384", 384).count(new.reader()) == 0  # old space emptied as rows moved
        assert await new.vectors.count(new.reader()) == 50
        async with new.reader().execute("SELECT DISTINCT embedded_with FROM crystals") as cursor:
            assert [r[0] for r in await cursor.fetchall()] == ["hashing-v1-256"]
    finally:
        await new.close()


def test_new_crystal_rejects_bad_input() -> None:
    for kwargs, message in [
        ({"text": "  "}, "non-empty"),
        ({"text": "x", "importance": 1.5}, "importance"),
        ({"text": "x", "lifespan": Lifespan.TTL}, "ttl_ms"),
        ({"text": "x", "ttl_ms": 5}, "ttl_ms"),
        ({"text": "x" * 100_001}, "at most"),
        ({"text": "x", "line_start": 5, "line_end": 2}, "line_end"),
    ]:
        with pytest.raises(ValueError, match=message):
            NewCrystal(**kwargs)  # type: ignore[arg-type]


async def test_closed_store_says_so(tmp_path: Path) -> None:
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.remember(NewCrystal("late"))


async def test_a_version_1_database_migrates_to_the_current_schema(tmp_path: Path, clock: FakeClock) -> None:
    from memory.storage.migrations import split_sql
    from memory.storage.schema import MIGRATIONS

    path = tmp_path / "v1.db"
    with sqlite3.connect(path) as raw:  # a v1 file, as the first release wrote it, with one crystal
        raw.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        assert isinstance(MIGRATIONS[0], str)
        for statement in split_sql(MIGRATIONS[0]):
            raw.execute(statement)
        raw.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    store = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
    try:
        await store.remember_many([NewCrystal("written after the migration")])
        from memory.retrieval.query import SearchMode, SearchRequest
        from memory.retrieval.search import search

        hits = await search(store, SearchRequest("migration", mode=SearchMode.KEYWORD))
        assert [h.crystal.text for h in hits] == ["written after the migration"]
    finally:
        await store.close()
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (str(SCHEMA_VERSION),)
        assert raw.execute("SELECT count(*) FROM sqlite_master WHERE name='crystals_fts_insert'").fetchone() == (0,)


class RecordingEmbedder(HashingEmbedder):
    """The real hashing embedder, remembering what it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        return super().embed_documents(texts)


async def test_context_is_embedded_with_the_text_but_is_not_the_text(tmp_path: Path, clock: FakeClock) -> None:
    embedder = RecordingEmbedder()
    store = await IntakeStore.open(tmp_path / "m.db", embedder, now_ms=clock)
    try:
        first = await store.remember(NewCrystal("yes, last May", context="Ann: when did you move to Lisbon?"))
        # The text in its context, and the text alone: the vector is their normalised sum.
        assert embedder.seen == ["Ann: when did you move to Lisbon?\nyes, last May", "yes, last May"]
        both = embedder.embed_documents(embedder.seen[:2])
        expected = (both[0] + both[1]) / np.linalg.norm(both[0] + both[1])
        stored = await store.vectors.vectors_of(store.reader(), [1])
        assert np.allclose(stored[1], expected, atol=1e-6)
        assert first.crystal.text == "yes, last May"
        assert first.crystal.context == "Ann: when did you move to Lisbon?"
        # Same text, other context: still the same crystal (the hash covers the text only).
        again = await store.remember(NewCrystal("yes, last May", context="Bo: did you like the concert?"))
        assert not again.created and again.crystal.id == first.crystal.id
        await store.remember_many([NewCrystal("the flat has a balcony", context="Ann: describe the flat")])
        await store.embed_backlog()
        assert embedder.seen[-2:] == ["Ann: describe the flat\nthe flat has a balcony", "the flat has a balcony"]
    finally:
        await store.close()


class QueryEmbedderDown(HashingEmbedder):
    """Named fake for a remote embedder that fails at query time (documents embed as usual)."""

    def embed_query(self, text: str) -> Vectors:
        raise EmbedderError("the embedding endpoint did not answer")


async def test_a_failing_vector_leg_leaves_no_keyword_task_behind(
    tmp_path: Path, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 14: the keyword leg's task was orphaned when the embedder raised. The read it had
    started still runs in its reader's thread when cancelled, and aiosqlite keeps its cursor: the
    store's close must not checkpoint behind it (it waited the whole busy timeout, 10 s, here)."""
    store = await IntakeStore.open(tmp_path / "m.db", QueryEmbedderDown(), now_ms=clock)
    try:
        await store.remember(NewCrystal("the staging database lives on db2"))
        before = asyncio.all_tasks()
        with pytest.raises(EmbedderError, match="did not answer"):
            await search(store, SearchRequest(query="staging database"))
        await asyncio.sleep(0)
        assert asyncio.all_tasks() - before == set()
    finally:
        with caplog.at_level(logging.WARNING, logger="memory"):
            await store.close()
    assert not [r.getMessage() for r in caplog.records if r.name == "memory.store"]


async def test_a_batch_that_fails_to_prepare_leaves_the_one_being_written_committed(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 14: the write of batch n was orphaned when preparing batch n + 1 raised."""
    from memory.storage.rows import prepare_batch as real

    calls = 0

    def prepare_then_fail(items: Any, now_ms: int, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("preparing the second batch failed")
        return real(items, now_ms, *args)

    monkeypatch.setattr("memory.storage.store.prepare_batch", prepare_then_fail)
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder(), now_ms=clock)
    try:
        before = asyncio.all_tasks()
        with pytest.raises(RuntimeError, match="second batch"):
            await store.remember_many([NewCrystal(f"fact number {i}") for i in range(10)], batch_size=5)
        assert asyncio.all_tasks() - before == set()
        assert (await store.stats())["total"] == 5  # the first batch was written whole
    finally:
        await store.close()


async def test_the_vector_codes_can_be_loaded_before_the_first_search(store: IntakeStore) -> None:
    assert await store.warm_vectors() == 0
    for i in range(3):
        await store.remember(NewCrystal(f"warm fact {i}"))
    loads = await asyncio.gather(store.warm_vectors(), store.warm_vectors())  # one load, both see it
    assert list(loads) == [3, 3]
    await store.remember(NewCrystal("one more fact"))
    assert await store.warm_vectors() == 4  # appended codes are added, not reloaded
    hits = await search(store, SearchRequest(query="warm fact", mode=SearchMode.VECTOR, limit=2))
    assert len(hits) == 2


async def test_a_read_left_open_on_the_writer_defers_a_checkpoint_and_is_a_transient_lock(
    tmp_path: Path, clock: FakeClock
) -> None:
    """CI, once: the embedding loop's checkpoint after a batch raised "database table is locked" (a
    read still open on the writer) and the failed task stopped the node. A checkpoint is a saving, not
    a duty: it is deferred (False, as when a reader keeps frames), and the loop defers a batch that
    meets such a lock instead of stopping."""
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder(), now_ms=clock)
    try:
        await store.remember_many([NewCrystal(f"fact number {i}") for i in range(50)])
        await store.writer.execute("CREATE TABLE probe (x)")
        reading = await store.writer.execute("SELECT rowid FROM crystals")
        assert await reading.fetchone() is not None  # mid-read: the table is held
        assert await store.checkpoint() is False
        with pytest.raises(sqlean.OperationalError) as refused:
            await store.writer.execute("DROP TABLE probe")
        assert is_transient_lock(refused.value), str(refused.value)
        await reading.close()
        assert await store.checkpoint() is True  # the read over: it folds
        assert not is_transient_lock(sqlean.OperationalError("no such table: nope"))
        assert not is_transient_lock(ValueError("database is locked"))
    finally:
        await store.close()
