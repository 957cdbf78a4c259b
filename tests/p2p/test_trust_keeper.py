"""The trust keeper of a running node (``p2p.trust.keeper``) on a real store: a round hands the
levels to the validator and releases held content of authors who became trusted only when the
person set that rule; a damaged file of an earlier release is set aside, never fatal at start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crypto.anchors import TrustAnchors
from marketplace.gossip.listing import ingest_listing
from marketplace.schema import MARKET_SCHEMA
from memory.embedders.hashing import HashingEmbedder
from memory.governance.quarantine import held
from memory.intake.store import IntakeStore
from memory.storage.store import MemoryStore
from p2p.schema import P2P_SCHEMA
from p2p.settings import TrustSettings
from p2p.trust.book import TrustBook, TrustLevel
from p2p.trust.floors import DAY_MS, Evidence
from p2p.trust.keeper import TrustKeeper
from p2p.validation import MessageValidator
from p2p.weather import NetworkWeather
from tests.p2p.conftest import NOW, listing

ME = b"m" * 32
PUBLISHER = b"p" * 32


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[IntakeStore]:
    """A real store with the tables a node with P2P and the market opens."""
    s = await IntakeStore.open(tmp_path / "memory.db", HashingEmbedder(), schemas=(P2P_SCHEMA, MARKET_SCHEMA))
    try:
        yield s
    finally:
        await s.close()


async def _worked_for_us(book: TrustBook, _store: MemoryStore) -> None:
    """This node's records: ten runs of the publisher's skills that worked, on three days."""
    book.set_executions(PUBLISHER, 10, 0)
    days = frozenset(NOW // DAY_MS - d for d in range(3))
    book.set_evidence({PUBLISHER: Evidence(days=days, executions_ok=10)})


async def _open(store: MemoryStore, folder: Path, settings: TrustSettings) -> tuple[TrustKeeper, MessageValidator]:
    validator = MessageValidator(TrustAnchors())
    keeper = TrustKeeper(
        ME, frozenset(), settings, validator, lambda: store, fold_evidence=_worked_for_us, now_ms=lambda: NOW
    )
    weather = NetworkWeather(validator, lambda: None, keeper.save)
    await keeper.open(folder / "trust.json", folder / "state.json", weather)
    return keeper, validator


@pytest.mark.parametrize("rule", [True, False])
async def test_a_round_releases_the_newly_trusted_authors_content_only_under_the_rule(
    store: IntakeStore, tmp_path: Path, rule: bool
) -> None:
    stored = await ingest_listing(store, listing(), PUBLISHER, author_has_standing=False)
    assert stored.held

    keeper, validator = await _open(store, tmp_path, TrustSettings(release_held_on_trust=rule))

    assert keeper.level_of_key(PUBLISHER) is TrustLevel.TRUSTED
    assert validator.trust_levels[PUBLISHER] is TrustLevel.TRUSTED  # handed to the validator
    still_held = {h.crystal.id for h in await held(store)}
    assert still_held == (set() if rule else {stored.crystal_id})


async def test_a_damaged_trust_file_is_set_aside_and_the_node_starts(store: MemoryStore, tmp_path: Path) -> None:
    (tmp_path / "trust.json").write_text("{not json")

    keeper, _ = await _open(store, tmp_path, TrustSettings())

    assert not (tmp_path / "trust.json").exists()
    assert (tmp_path / f"trust.json.damaged-{NOW}").read_text() == "{not json"
    assert keeper.book.outcomes.keys() == {PUBLISHER}  # the round ran on this node's own records
