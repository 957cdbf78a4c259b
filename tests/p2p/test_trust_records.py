"""The trust book and weather sequences live in the node's database; the JSON files of earlier
releases are imported once and kept aside."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from p2p.schema import P2P_SCHEMA
from p2p.trust.book import Outcomes, TrustBook, TrustLimits
from p2p.trust.records import TrustRecords

A, B, C, M = (bytes([i]) * 32 for i in (1, 2, 3, 9))
UPGRADE = Path(__file__).resolve().parents[3] / "shared" / "data" / "upgrade-from-v9"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[IntakeStore]:
    s = await IntakeStore.open(tmp_path / "memory.db", HashingEmbedder(), schemas=(P2P_SCHEMA,))
    try:
        yield s
    finally:
        await s.close()


def rows(store: IntakeStore, table: str) -> int:
    with sqlite3.connect(store.path) as raw:
        return int(raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


async def test_a_book_round_trips_in_order_and_a_save_writes_only_what_changed(store: IntakeStore) -> None:
    book = TrustBook(A, frozenset({M}))
    book.record(C, valid=2)
    book.record(B, valid=40, executions_ok=4)
    book.compute()
    assert book.attest(M, [(B, 900), (C, 100)])
    records = TrustRecords(store)
    await records.save(book)
    again = await TrustRecords(store).load(A, frozenset({M}), TrustLimits())
    assert again.outcomes == book.outcomes and list(again.outcomes) == [C, B]  # oldest news first, kept
    assert again.attestations == book.attestations
    del book.outcomes[C]  # forgotten (the book's limit), and one rating changed
    book.record(B, invalid=1)
    await records.save(book)
    assert rows(store, "trust_outcomes") == 1
    loaded = await TrustRecords(store).load(A, frozenset({M}), TrustLimits())
    assert loaded.outcomes == {B: Outcomes(valid=40, invalid=1, executions_ok=4)}
    assert rows(store, "trust_ratings") == 2


async def test_a_book_larger_than_the_limits_loads_trimmed(store: IntakeStore) -> None:
    big = TrustBook(A, frozenset({M}), TrustLimits(max_tracked_peers=50))
    for i in range(50):
        big.record(bytes([i + 10]) * 32, valid=1)
    await TrustRecords(store).save(big)
    small = await TrustRecords(store).load(A, frozenset({M}), TrustLimits(max_tracked_peers=20))
    assert list(small.outcomes) == list(big.outcomes)[-20:]  # the newest news kept


async def test_the_json_files_are_imported_once_and_kept_aside(store: IntakeStore, tmp_path: Path) -> None:
    trust, state = tmp_path / "trust.json", tmp_path / "state.json"
    trust.write_text(json.dumps({"outcomes": {B.hex(): {"valid": 3}}, "attestations": {M.hex(): {B.hex(): 800}}}))
    state.write_text(json.dumps({"own_weather_seq": 7, "weather_seq": {M.hex(): 5}}))
    records = TrustRecords(store)
    assert await records.import_trust_file(trust, A, TrustLimits())
    assert await records.import_state_file(state)
    assert not trust.exists() and (tmp_path / "trust.json.imported").exists()
    assert not await records.import_trust_file(trust, A, TrustLimits())  # nothing left to import
    book = await records.load(A, frozenset({M}), TrustLimits())
    assert book.outcomes == {B: Outcomes(valid=3)} and book.attestations == {M: {B: 800}}
    assert await records.weather_sequences() == (7, {M: 5})


async def test_a_damaged_file_is_refused_and_left_where_it_is(store: IntakeStore, tmp_path: Path) -> None:
    trust, state = tmp_path / "trust.json", tmp_path / "state.json"
    trust.write_text("{broken")
    state.write_text('{"weather_seq": {"not hex": 1}}')
    with pytest.raises(ValueError, match="unreadable trust book"):
        await TrustRecords(store).import_trust_file(trust, A, TrustLimits())
    with pytest.raises(ValueError, match="unreadable network state"):
        await TrustRecords(store).import_state_file(state)
    assert trust.read_text() == "{broken" and state.exists()
    assert await TrustRecords(store).weather_sequences() == (0, {})


@pytest.mark.skipif(not UPGRADE.exists(), reason=f"no upgrade data at {UPGRADE}")
async def test_the_v9_sellers_trust_book_is_imported_whole(store: IntakeStore, tmp_path: Path) -> None:
    shutil.copytree(UPGRADE / "seller" / "p2p", tmp_path / "p2p")
    trust = tmp_path / "p2p" / "trust.json"
    before = TrustBook.load(trust, A, frozenset())
    assert before.outcomes or before.attestations
    assert await TrustRecords(store).import_trust_file(trust, A, TrustLimits())
    after = await TrustRecords(store).load(A, frozenset(), TrustLimits())
    assert (after.outcomes, after.attestations) == (before.outcomes, before.attestations)
