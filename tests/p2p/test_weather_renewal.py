"""A management node renews its weather while it lasts (``p2p.weather``): a node that missed the one
broadcast, or joined after it, obeys it from the next renewal; one that obeys it already changes
nothing; an end of a weather is renewed too, while the weather it ended would have lasted.

The first tests run the parts a daemon runs (a real store with its hormones, the validator,
``NetworkWeather`` and the ``WeatherStation`` that broadcasts and renews, with the envelopes it would
gossip kept) for a management node and edges, with a clock they move; the last runs real
daemons: a node that starts during a storm, and one that was offline when the storm ended.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import NetworkOverride
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from node.parts.weather_station import WeatherStation
from p2p.kinds import GossipKind
from p2p.topics import WEATHER_TOPIC
from p2p.validation import MessageValidator
from p2p.verdicts import Reason
from p2p.weather import WEATHER, Announced, Applied, NetworkWeather, WeatherSequences, renewal_of
from tests.conftest import clean_env
from tests.daemons import Node, management_node, wait_for
from tests.p2p.conftest import NOW

MANAGER = Identity.from_seed(b"m" * 32)
OTHER_MANAGER = Identity.from_seed(b"o" * 32)
MESSAGE_CACHE_S = 5  # py-libp2p gossipsub's history: 5 heartbeats (the node's heartbeat is 1 s)


class Clock:
    def __init__(self) -> None:
        self.ms = NOW

    def __call__(self) -> int:
        return self.ms


async def _no_save() -> None:
    return None


@dataclass
class Station:
    """One node's weather, as its daemon holds it: what it sends is sealed and kept in ``sent``."""

    identity: Identity
    store: IntakeStore
    endocrine: Endocrine
    validator: MessageValidator
    weather: NetworkWeather
    clock: Clock
    sent: list[Envelope]
    station: WeatherStation

    @classmethod
    async def open(cls, path: Path, identity: Identity, clock: Clock) -> Station:
        store = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
        endocrine = await Endocrine.attach(store)
        sequences = WeatherSequences()
        anchors = TrustAnchors([MANAGER.public_key, OTHER_MANAGER.public_key])
        validator = MessageValidator(anchors, kinds=every_kind(sequences))
        weather = NetworkWeather(validator, lambda: endocrine, _no_save, sequences)
        sent: list[Envelope] = []

        async def publish(kind: GossipKind[Any], message: Any, *, now_ms: int) -> Envelope:
            sent.append(kind.seal(identity, message, now_ms))
            return sent[-1]

        station = WeatherStation(weather, identity.public_key, clock, publish, {})
        return cls(identity, store, endocrine, validator, weather, clock, sent, station)

    @property
    def override(self) -> NetworkOverride | None:
        return self.endocrine.state().override

    async def broadcast(self, level_milli: int, duration_s: int, now_ms: int) -> Envelope:
        self.clock.ms = now_ms
        await self.station.broadcast(level_milli, duration_s, "drill")
        return self.sent[-1]

    async def renew(self, now_ms: int) -> Envelope | None:
        """What the renewal task sends at ``now_ms``, if anything."""
        self.clock.ms = now_ms
        return self.sent[-1] if await self.station.renew_once() is not None else None

    async def receive(self, envelope: Envelope, now_ms: int, origin: Identity = MANAGER) -> Applied:
        """Validate and apply, as the daemon does."""
        outcome = self.validator.validate(WEATHER_TOPIC, envelope.encode(), origin.peer_id, now_ms)
        assert outcome.reason is Reason.ACCEPTED, outcome.reason
        return await self.weather.apply(outcome.message, envelope.author)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def stations(tmp_path: Path, clock: Clock) -> AsyncIterator[tuple[Station, Station, Station]]:
    who = (("manager", MANAGER), ("a", Identity.from_seed(b"a" * 32)), ("b", Identity.from_seed(b"b" * 32)))
    opened = [await Station.open(tmp_path / f"{name}.db", identity, clock) for name, identity in who]
    try:
        yield opened[0], opened[1], opened[2]
    finally:
        for station in opened:
            await station.store.close()


async def test_a_node_that_missed_the_weather_obeys_its_renewal_and_one_that_had_it_changes_nothing(
    stations: tuple[Station, Station, Station], clock: Clock
) -> None:
    manager, had_it, missed_it = stations
    first = await manager.broadcast(900, 600, NOW)
    assert await had_it.receive(first, NOW) is Applied.CHANGED
    until = NOW + 600_000

    clock.ms = NOW + 30_500
    renewed = await manager.renew(clock.ms)
    assert renewed is not None
    # Same end to the millisecond: the issue time lies within a second before now.
    assert clock.ms - 1000 < renewed.ts_ms <= clock.ms
    assert await had_it.receive(renewed, clock.ms) is Applied.SAME
    assert await missed_it.receive(renewed, clock.ms) is Applied.CHANGED
    assert missed_it.override == had_it.override == NetworkOverride(0.9, until, "drill", MANAGER.public_key.hex())
    assert missed_it.validator.halted_until_ms == had_it.validator.halted_until_ms == until

    # A renewal's sequence is used up like any weather's: the same envelope again is stale.
    assert missed_it.validator.validate(WEATHER_TOPIC, renewed.encode(), MANAGER.peer_id, clock.ms).reason in {
        Reason.REPLAYED,
        Reason.STALE_WEATHER,
    }


async def test_the_end_of_a_weather_is_renewed_while_the_weather_would_have_lasted(
    stations: tuple[Station, Station, Station], clock: Clock
) -> None:
    manager, heard_the_end, missed_the_end = stations
    storm = await manager.broadcast(900, 600, NOW)
    for edge in (heard_the_end, missed_the_end):
        assert await edge.receive(storm, NOW) is Applied.CHANGED
    clock.ms = NOW + 10_000
    end = await manager.broadcast(0, 1, clock.ms)
    assert await heard_the_end.receive(end, clock.ms) is Applied.CHANGED and heard_the_end.override is None

    clock.ms = NOW + 40_000
    renewed = await manager.renew(clock.ms)
    assert renewed is not None
    assert await heard_the_end.receive(renewed, clock.ms) is Applied.SAME
    assert await missed_the_end.receive(renewed, clock.ms) is Applied.CHANGED
    assert missed_the_end.override is None and missed_the_end.validator.halted_until_ms == 0

    clock.ms = NOW + 600_000 - 999  # the storm would have ended within the second: nothing to renew
    assert await manager.renew(clock.ms) is None


async def test_renewals_stop_once_another_management_nodes_weather_replaced_this_ones(
    stations: tuple[Station, Station, Station], clock: Clock
) -> None:
    manager, _, _ = stations
    await manager.broadcast(900, 600, NOW)
    assert await manager.renew(NOW + 30_000) is not None
    other = await Station.open(manager.store.path.with_name("other.db"), OTHER_MANAGER, clock)
    try:
        theirs = await other.broadcast(500, 600, NOW + 31_000)
    finally:
        await other.store.close()
    assert await manager.receive(theirs, NOW + 31_000, origin=OTHER_MANAGER) is Applied.CHANGED
    # Renewing now would put this node's weather back over theirs on every node, back and forth.
    assert await manager.renew(NOW + 60_000) is None
    assert await manager.renew(NOW + 90_000) is None


async def test_a_restarted_management_node_renews_its_own_weather_and_an_edge_renews_nothing(
    tmp_path: Path, clock: Clock
) -> None:
    manager = await Station.open(tmp_path / "manager.db", MANAGER, clock)
    edge = await Station.open(tmp_path / "edge.db", Identity.from_seed(b"e" * 32), clock)
    try:
        storm = await manager.broadcast(900, 600, NOW)
        assert await edge.receive(storm, NOW) is Applied.CHANGED
        own_seq, applied = manager.weather.own_seq, manager.weather.sequences.snapshot()
    finally:
        await manager.store.close()
    try:
        again = await Station.open(tmp_path / "manager.db", MANAGER, clock)
        again.weather.restore(own_seq, applied, me=MANAGER.public_key)
        renewed = await again.renew(NOW + 30_000)
        assert renewed is not None and renewed.ts_ms + 570_000 == NOW + 600_000
        assert await edge.receive(renewed, NOW + 30_000) is Applied.SAME
        edge.weather.restore(edge.weather.own_seq, edge.weather.sequences.snapshot(), me=edge.identity.public_key)
        assert await edge.renew(NOW + 30_000) is None
        await again.store.close()
    finally:
        await edge.store.close()


async def test_a_weather_overtaken_by_a_newer_one_before_it_was_applied_is_dropped(
    stations: tuple[Station, Station, Station], clock: Clock
) -> None:
    manager, edge, _ = stations
    storm = await manager.broadcast(900, 600, NOW)
    assert await edge.receive(storm, NOW) is Applied.CHANGED
    clock.ms = NOW + 30_000
    renewed = await manager.renew(clock.ms)
    clock.ms = NOW + 31_000
    end = await manager.broadcast(0, 1, clock.ms)
    assert renewed is not None
    # Both pass the validator before either is applied (gossip fetched them out of order); applied
    # newest first, the older renewal must not bring the storm back.
    checked = [edge.validator.validate(WEATHER_TOPIC, e.encode(), MANAGER.peer_id, clock.ms) for e in (end, renewed)]
    assert [c.reason for c in checked] == [Reason.ACCEPTED, Reason.ACCEPTED]
    assert await edge.weather.apply(checked[0].message, MANAGER.public_key) is Applied.CHANGED
    assert await edge.weather.apply(checked[1].message, MANAGER.public_key) is Applied.SUPERSEDED
    assert edge.override is None and edge.validator.halted_until_ms == 0


def test_a_renewal_keeps_the_end_and_none_is_made_in_the_last_second() -> None:
    announced = Announced(900, "drill", NOW + 60_000)
    renewal = renewal_of(announced, NOW + 59_000)
    assert renewal is not None and (renewal.duration_s, renewal.issued_ms) == (1, NOW + 59_000)
    assert renewal_of(announced, NOW + 59_001) is None
    later = renewal_of(announced, NOW + 1_500)
    assert later is not None and (later.duration_s, later.issued_ms) == (59, NOW + 1_000)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_node_starting_during_a_storm_obeys_it_and_one_offline_at_its_end_clears_it(tmp_path: Path) -> None:
    base = clean_env(
        BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__TARGET_PEERS="0", BITTERBOT_P2P__WEATHER_RENEW_S="2"
    )
    manager, trust = management_node(tmp_path, base)
    manager.start()
    late = Node(tmp_path, "late", {**base, **trust, "BITTERBOT_P2P__BOOTSTRAP": json.dumps([manager.address()])})
    nodes = [manager, late]
    try:
        sent = manager.cli("weather", "broadcast", "--level", "0.9", "--duration", "10m", "--reason", "storm")
        assert sent.returncode == 0, sent.stderr
        until = json.loads(manager.cli("weather", "show", "--json").stdout)["until_ms"]

        # Past the manager's message cache (5 heartbeats of 1 s), whose gossip would still offer the one
        # broadcast to a newcomer: now only a renewal can tell it.
        time.sleep(MESSAGE_CACHE_S + 2)
        late.start()
        late.address()
        obeyed = wait_for(
            lambda: (w := late.json("weather", "show"))["halts_untrusted_ingestion"] and w, 120, "the storm", nodes
        )
        assert (obeyed["level"], obeyed["reason"], obeyed["until_ms"]) == (0.9, "storm", until)
        # It had no sequence of the manager's: it asked before obeying (p2p.weather.confirm). Status
        # counts as of its last snapshot, taken after the round or soon.
        confirm = lambda: late.json("status")["daemon"]["details"]["p2p"]["weather_confirm"]  # noqa: E731
        wait_for(lambda: confirm()["rounds"] >= 1, 60, "the round that asked the manager", nodes)

        first_run_log = late.stop()  # offline while the storm is called off; its own state still has the storm
        assert "Traceback" not in first_run_log, first_run_log
        ended = manager.cli("weather", "broadcast", "--level", "0", "--duration", "1s", "--reason", "over")
        assert ended.returncode == 0, ended.stderr
        late.start()
        late.address()
        wait_for(lambda: not late.json("weather", "show")["active"], 120, "the end of the storm", nodes)
        # Status counts as of its last snapshot: once it counts a renewal after the end, it counts the end.
        ingested = wait_for(
            lambda: (i := late.json("status")["daemon"]["details"]["p2p"]["ingested"])["weather_renewals"] and i,
            60,
            "a renewal of the end",
            nodes,
        )
        assert ingested["weather"] == 1, "the end changed what it obeyed; its renewals did not"
    finally:
        logs = {node.data.name: node.stop() for node in nodes}
    for name, log in logs.items():
        assert "Traceback" not in log, f"{name}:\n{log}"


async def test_a_node_without_the_issuers_sequence_refuses_a_replayed_renewal_and_obeys_the_next(
    stations: tuple[Station, Station, Station], clock: Clock
) -> None:
    """A storm's renewal, captured and replayed after the storm was called off, to a node that holds no
    sequence of the manager's (new, and it missed the end): refused, as not issued just now; the end's
    next renewal is obeyed."""
    manager, _, newcomer = stations
    await manager.broadcast(900, 600, NOW)
    captured = await manager.renew(NOW + 30_000)
    assert captured is not None
    await manager.broadcast(0, 1, NOW + 31_000)  # the end, which the newcomer never hears

    replayed_at = NOW + 50_000  # well within the envelope's age window
    outcome = newcomer.validator.validate(WEATHER_TOPIC, captured.encode(), MANAGER.peer_id, replayed_at)
    assert outcome.reason is Reason.STALE_WEATHER
    assert newcomer.override is None and newcomer.validator.halted_until_ms == 0

    renewed_end = await manager.renew(NOW + 60_000)
    assert renewed_end is not None
    assert await newcomer.receive(renewed_end, NOW + 60_000) is Applied.SAME  # nothing to clear, seq learnt
    assert newcomer.weather.sequences.last(MANAGER.public_key) > WEATHER.parse(captured.body_map()).seq
