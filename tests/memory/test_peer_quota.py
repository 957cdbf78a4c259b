"""Peer content quotas: count and bytes, per author and in total; the least trusted author's oldest
crystals go first, and what the node bought or the person approved is never touched."""

from __future__ import annotations

from memory.governance.peer_quota import Evicted, PeerContentQuota, enforce, usage_by_source
from memory.governance.quarantine import approve
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin, Quarantine, Scope, SemanticType
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.storage.crystal_queries import audit_trail
from tests.memory.conftest import FakeClock

TRUSTED = "peer:" + "aa" * 32
STRANGER = "peer:" + "bb" * 32
OTHER_STRANGER = "peer:" + "cc" * 32
RANKS = {TRUSTED: (2, 0.8), STRANGER: (1, 0.0), OTHER_STRANGER: (1, 0.0)}


def standing(source: str) -> tuple[int, float]:
    return RANKS[source]


async def gossiped(store: IntakeStore, clock: FakeClock, source: str, text: str, *, scope: Scope = Scope.SHARED) -> str:
    clock.advance(1_000)  # each arrives a second after the last: age decides among equals
    new = NewCrystal(text, semantic_type=SemanticType.SKILL, origin=Origin.PEER, scope=scope, source=source,
                     actor=source, quarantine=Quarantine("its author is not trusted here yet"))  # fmt: skip
    return (await store.remember(new)).crystal.id


async def live_ids(store: IntakeStore) -> set[str]:
    async with store.reader().execute("SELECT id FROM crystals WHERE lifecycle != 'expired'") as cursor:
        return {str(r[0]) for r in await cursor.fetchall()}


async def test_an_author_over_its_count_loses_its_oldest_and_the_audit_log_says_so(
    store: IntakeStore, clock: FakeClock
) -> None:
    quota = PeerContentQuota(per_author_crystals=3)
    ids = [await gossiped(store, clock, STRANGER, f"how to tune step {i} of the kernel") for i in range(4)]
    other = await gossiped(store, clock, OTHER_STRANGER, "how to rotate logs with logrotate")

    evicted = await enforce(store, quota, STRANGER, standing)

    assert evicted == Evicted(1, len(b"how to tune step 0 of the kernel"))
    assert await live_ids(store) == {*ids[1:], other}
    hits = await search(store, SearchRequest(query="tune step kernel", mode=SearchMode.KEYWORD, include_held=True))
    assert {h.crystal.id for h in hits} == set(ids[1:])  # gone from the keyword index too
    assert ("evicted: over its author's peer content quota", "quota") in [
        (reason, actor) for _, _, reason, actor, _ in await audit_trail(store, ids[0])
    ]
    async with store.reader().execute("SELECT count(*) FROM quarantine WHERE crystal_id = ?", (ids[0],)) as cursor:
        assert (await cursor.fetchone()) == (0,)


async def test_an_author_over_its_bytes_loses_as_many_oldest_as_it_takes(store: IntakeStore, clock: FakeClock) -> None:
    quota = PeerContentQuota(per_author_bytes=2_500)
    ids = [await gossiped(store, clock, STRANGER, f"{i} " + "x" * 998) for i in range(5)]  # 1,000 bytes each

    evicted = await enforce(store, quota, STRANGER, standing)

    assert evicted == Evicted(3, 3_000)
    assert await live_ids(store) == set(ids[3:])
    assert (await usage_by_source(store.reader()))[STRANGER].bytes == 2_000


async def test_over_the_total_the_least_trusted_go_first_oldest_first_even_when_the_trusted_are_older(
    store: IntakeStore, clock: FakeClock
) -> None:
    quota = PeerContentQuota(total_crystals=5)
    trusted = [await gossiped(store, clock, TRUSTED, f"trusted how-to number {i}") for i in range(3)]
    first = await gossiped(store, clock, STRANGER, "stranger how-to one")
    second = await gossiped(store, clock, OTHER_STRANGER, "another stranger how-to")
    third = await gossiped(store, clock, STRANGER, "stranger how-to two")

    evicted = await enforce(store, quota, STRANGER, standing)

    assert evicted.crystals == 1
    assert await live_ids(store) == {*trusted, second, third}  # the oldest of the equally untrusted went
    assert first not in await live_ids(store)


async def test_bought_and_approved_content_is_neither_counted_nor_evicted(store: IntakeStore, clock: FakeClock) -> None:
    quota = PeerContentQuota(per_author_crystals=1, total_crystals=1)
    bought = await gossiped(store, clock, STRANGER, "a skill this node paid for", scope=Scope.PRIVATE)
    kept = await gossiped(store, clock, STRANGER, "a skill the person approved")
    await approve(store, kept, actor="local")
    latest = await gossiped(store, clock, STRANGER, "the newest gossip")

    assert await enforce(store, quota, STRANGER, standing) == Evicted()
    assert {bought, kept, latest} <= await live_ids(store)
    assert (await usage_by_source(store.reader()))[STRANGER].crystals == 1


async def test_within_every_quota_nothing_is_touched(store: IntakeStore, clock: FakeClock) -> None:
    ids = {await gossiped(store, clock, STRANGER, f"small how-to {i}") for i in range(3)}
    assert await enforce(store, PeerContentQuota(), STRANGER, standing) == Evicted()
    assert await live_ids(store) == ids
