"""Executions of skills the local agent reports, and the trust they give the peer a skill came from."""

from __future__ import annotations

from marketplace.executions import executions_by_source, good_run_days_by_source, record_execution
from marketplace.gossip.listing import ingest_listing
from memory.governance.quarantine import held
from memory.intake.store import IntakeStore
from p2p.trust.book import TrustBook
from p2p.trust.floors import NO_FLOORS
from tests.p2p.conftest import listing

PUBLISHER = b"p" * 32
OTHER = b"o" * 32
V1 = "To rotate logs: run logrotate -f /etc/logrotate.conf"


async def test_executions_of_a_peers_skills_feed_its_local_trust(store: IntakeStore) -> None:
    result = await ingest_listing(store, listing(V1), PUBLISHER, author_has_standing=True)
    assert result.crystal_id is not None
    for success in (True, True, True, False):
        await record_execution(store, result.crystal_id, success=success, reward_milli=1000 if success else 0)
    by_source = await executions_by_source(store)
    assert by_source == {f"peer:{PUBLISHER.hex()}": (3, 1)}
    book = TrustBook(me=OTHER, management=frozenset(), floors=NO_FLOORS)
    book.set_executions(PUBLISHER, *by_source[f"peer:{PUBLISHER.hex()}"])
    book.set_executions(PUBLISHER, *by_source[f"peer:{PUBLISHER.hex()}"])  # totals: setting twice changes nothing
    # 5 x 3 successes - 5 x 1 failure = 10 points: local trust 10 / 20 = 0.5
    assert book.compute()[PUBLISHER].local == 0.5


async def test_runs_of_a_held_skill_earn_its_author_nothing(store: IntakeStore) -> None:
    """Issue 27: one recorded run of a skill still held in quarantine made a fresh key trusted."""
    stranger = await ingest_listing(store, listing(V1), PUBLISHER, author_has_standing=False)
    assert stranger.crystal_id is not None and stranger.held is not None
    assert [h.crystal.id for h in await held(store)] == [stranger.crystal_id]
    for _ in range(3):
        await record_execution(store, stranger.crystal_id, success=True, reward_milli=1000)
    assert await executions_by_source(store) == {}  # held: nothing counts
    assert await good_run_days_by_source(store) == {}
