"""Skills from peers into memory: versions, dedup, revocation, governance."""

from __future__ import annotations

from marketplace.executions import executions_by_source, record_execution
from memory.governance import check_exportable
from memory.model import Lifecycle, Origin, Scope, SemanticType, content_hash
from memory.store import MemoryStore
from p2p.ingest import Ingested, apply_revocation, ingest_listing
from p2p.messages import SkillRevocation
from p2p.trust import TrustBook
from tests.p2p.conftest import listing

PUBLISHER = b"p" * 32
OTHER = b"o" * 32
V1 = "To rotate logs: run logrotate -f /etc/logrotate.conf"
V2 = "To rotate logs: run logrotate -f /etc/logrotate.conf, then check journalctl --verify"


async def test_a_shared_skill_becomes_a_peer_crystal(store: MemoryStore) -> None:
    result = await ingest_listing(store, listing(V1), PUBLISHER)
    assert result.outcome is Ingested.CREATED and result.crystal_id is not None
    crystal = await store.get(result.crystal_id)
    assert (crystal.semantic_type, crystal.origin, crystal.scope) == (SemanticType.SKILL, Origin.PEER, Scope.SHARED)
    assert crystal.source == f"peer:{PUBLISHER.hex()}" and crystal.skill is not None
    assert (crystal.skill.stable_skill_id, crystal.skill.version, crystal.skill.tags) == (
        "ops.rotate-logs",
        1,
        ("ops", "logs"),
    )
    assert crystal.content_hash == content_hash(V1) and crystal.lifecycle is Lifecycle.GENERATED
    check_exportable(crystal, store.now_ms())  # a skill may travel on


async def test_newer_versions_deprecate_older_and_older_ones_are_ignored(store: MemoryStore) -> None:
    first = await ingest_listing(store, listing(V1), PUBLISHER)
    second = await ingest_listing(store, listing(V2, version=2, content_hash=content_hash(V2)), PUBLISHER)
    assert second.outcome is Ingested.CREATED and second.deprecated == 1
    assert first.crystal_id is not None and second.crystal_id is not None
    old = await store.get(first.crystal_id)
    assert old.skill is not None and old.skill.deprecated and old.skill.deprecated_by == second.crystal_id
    new = await store.get(second.crystal_id)
    assert new.skill is not None and new.skill.previous_version_id == first.crystal_id
    stale = await ingest_listing(
        store, listing(V1 + " (old copy)", content_hash=content_hash(V1 + " (old copy)")), PUBLISHER
    )
    assert stale.outcome is Ingested.NOT_NEWER
    again = await ingest_listing(store, listing(V1), OTHER)  # another publisher, the same text: dedup
    assert again.outcome is Ingested.DUPLICATE and again.crystal_id == first.crystal_id


async def test_paid_listings_store_nothing_and_revocation_deprecates_every_version(store: MemoryStore) -> None:
    paid = await ingest_listing(store, listing(V1, content=None), PUBLISHER)
    assert paid.outcome is Ingested.LISTING_ONLY and (await store.stats())["total"] == 0
    await ingest_listing(store, listing(V1), PUBLISHER)
    other = await ingest_listing(store, listing(V2, content_hash=content_hash(V2)), OTHER)
    assert await apply_revocation(store, SkillRevocation("ops.rotate-logs", PUBLISHER, "broken")) == 1
    assert other.crystal_id is not None
    untouched = await store.get(other.crystal_id)
    assert untouched.skill is not None and not untouched.skill.deprecated  # only the publisher's own versions


async def test_executions_of_a_peers_skills_feed_its_local_trust(store: MemoryStore) -> None:
    result = await ingest_listing(store, listing(V1), PUBLISHER)
    assert result.crystal_id is not None
    for success in (True, True, True, False):
        await record_execution(store, result.crystal_id, success=success, reward_milli=1000 if success else 0)
    by_source = await executions_by_source(store)
    assert by_source == {f"peer:{PUBLISHER.hex()}": (3, 1)}
    book = TrustBook(me=OTHER, management=frozenset())
    book.set_executions(PUBLISHER, *by_source[f"peer:{PUBLISHER.hex()}"])
    book.set_executions(PUBLISHER, *by_source[f"peer:{PUBLISHER.hex()}"])  # totals: setting twice changes nothing
    # 5 x 3 successes - 5 x 1 failure = 10 points: local trust 10 / 20 = 0.5
    assert book.compute()[PUBLISHER].local == 0.5
