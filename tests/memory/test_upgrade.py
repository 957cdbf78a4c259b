"""Data dirs made by the schema-v9 release open on this one with nothing lost (../shared/data/upgrade-from-v9)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sqlean

from marketplace.schema import MARKET_SCHEMA
from memory.embedders.hashing import HashingEmbedder
from memory.entities.index import index_all
from memory.entities.recognise import entity_key, mentions
from memory.governance.quarantine import held
from memory.intake.store import IntakeStore
from memory.storage.row_writes import crystal_any
from memory.storage.schema import SCHEMA_VERSION
from memory.sync.replica import Replica
from memory.sync.schema import SYNC_SCHEMA
from p2p.schema import P2P_SCHEMA
from p2p.trust.book import TrustBook

UPGRADE = Path(__file__).resolve().parents[3] / "shared" / "data" / "upgrade-from-v9"
pytestmark = pytest.mark.skipif(not UPGRADE.exists(), reason=f"no upgrade data at {UPGRADE}")

TABLES = (
    "crystals", "associations", "attributions", "audit_log", "provenance", "imported_files", "skill_executions",
    "listings", "purchases", "sales", "bounties", "endorsements", "merges", "replay_queue",
)  # fmt: skip


def snapshot(db: Path) -> tuple[dict[str, int], list[tuple[str, ...]]]:
    """Row counts of every table we own, and every crystal as it reads (id, text, type, lifecycle, ...)."""
    conn = sqlean.connect(str(db))
    try:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
        crystals = conn.execute(
            "SELECT id, text, content_hash, semantic_type, origin, lifecycle, scope, sensitivity, importance, source "
            "FROM crystals ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    return counts, [tuple(str(v) for v in row) for row in crystals]


@pytest.mark.parametrize("name", ["seller", "buyer"])
async def test_a_v9_data_dir_opens_with_nothing_lost(tmp_path: Path, name: str) -> None:
    data = tmp_path / name
    shutil.copytree(UPGRADE / name, data)
    db = data / "memory" / "crystals.db"
    before_counts, before_crystals = snapshot(db)
    memory_md = (data / "workspace" / "MEMORY.md").read_bytes() if (data / "workspace" / "MEMORY.md").exists() else b""

    # as a node opens it (node/parts/memory.py)
    store = await IntakeStore.open(db, HashingEmbedder(), schemas=(MARKET_SCHEMA, P2P_SCHEMA, SYNC_SCHEMA))
    try:
        assert await store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert await store.get_meta(SYNC_SCHEMA.version_key) == str(SYNC_SCHEMA.version)
        # v9 made the marketplace's tables up to the payment column: adopted at 5, then indexed
        assert await store.get_meta(MARKET_SCHEMA.version_key) == str(MARKET_SCHEMA.version)
        async with store.reader().execute("SELECT count(*) FROM listings_fts") as cursor:
            assert await cursor.fetchone() == (before_counts["listings"],)
        waiting = await held(store)
        async with store.reader().execute(
            "SELECT c.id FROM crystals c WHERE c.origin = 'peer' AND c.id IN (SELECT crystal_id FROM purchases)"
        ) as cursor:
            bought = {row[0] for row in await cursor.fetchall()}
        for crystal_id in bought:  # what this node bought stays the agent's: it chose to buy it
            assert not (await store.get(crystal_id)).quarantined
        # v13: the old layers (observation, ...) became the design's four; types stay as their callers
        # gave them, marked as typed before automatic typing existed.
        async with store.reader().execute(
            "SELECT DISTINCT epistemic_layer, type_source, type_confidence FROM crystals"
        ) as cursor:
            rows = await cursor.fetchall()
        assert {r[0] for r in rows} <= {"experience", "directive", "world_fact", "mental_model"}
        assert {(r[1], r[2]) for r in rows} == {("legacy", 1.0)}
        live = [c async for c in store.iter_live()]
        assert live and all(c.superseded is None for c in live)  # v16: nothing was replaced before it
        layers = {c.id: c.epistemic_layer.value for c in live}
        for crystal in before_crystals:
            if crystal[3] in ("fact", "relationship", "skill"):
                assert layers[crystal[0]] == "world_fact" or crystal[4] in ("dream", "inferred")
        # issue 52: every crystal it held is owed a reading for the entity graph, and gets one
        async with store.reader().execute("SELECT count(*) FROM entities_owed") as cursor:
            assert await cursor.fetchone() == (before_counts["crystals"],)
        assert await index_all(store) == before_counts["crystals"]
        async with store.reader().execute(
            "SELECT c.id, e.key FROM crystal_entities ce JOIN crystals c ON c.rowid = ce.crystal_rowid "
            "JOIN entities e ON e.id = ce.entity_id"
        ) as cursor:
            linked = {(str(r[0]), str(r[1])) for r in await cursor.fetchall()}
        expected: set[tuple[str, str]] = set()
        for one in [await crystal_any(store.reader(), row[0]) for row in before_crystals]:
            for m in mentions(one.text, voice=one.voice, context=one.context):
                expected |= {(one.id, m.key)} | ({(one.id, entity_key(m.alias))} if m.alias else set())
        assert linked == expected  # what the rules name in each, and nothing else
        assert linked or name == "buyer"  # the seller's chat names Caroline and Melanie; the buyer's none
        # issue 51: the file joins a device group: every live crystal it held is said once, whole
        replica = Replica(store, "device-upgraded")
        await replica.open()
        assert await replica.start() == len(live)
        said = await replica.write_down()
        stored = {op.target: op for op in said if op.change.value == "store"}
        # secrets stay on the device unless the person allows them ([devices] carry_confidential)
        assert stored.keys() == {c.id for c in live if c.sensitivity.value != "confidential"}
        assert all(stored[c.id].text == c.text for c in live if c.id in stored)
        await replica.stop()
    finally:
        await store.close()

    after_counts, after_crystals = snapshot(db)
    assert after_counts == before_counts
    assert after_crystals == before_crystals
    assert waiting == []  # neither dir holds peer content it did not buy
    if memory_md:
        assert (data / "workspace" / "MEMORY.md").read_bytes() == memory_md
    trust = TrustBook.load(data / "p2p" / "trust.json", b"\0" * 32, frozenset())
    assert trust.outcomes or trust.attestations or name == "buyer"


def test_the_upgrade_data_is_what_its_readme_says() -> None:
    """Guards the test above against data that silently changed: the counts of shared/'s README."""
    counts, crystals = snapshot(UPGRADE / "seller" / "memory" / "crystals.db")
    assert counts["crystals"] == 82 and counts["associations"] == 278 and counts["sales"] == 1
    assert sum(1 for c in crystals if c[7] == "confidential") == 1
    counts, crystals = snapshot(UPGRADE / "buyer" / "memory" / "crystals.db")
    assert counts["crystals"] == 1 and counts["purchases"] == 1 and crystals[0][4] == "peer"
