"""A node learns an issuer's current sequence before it obeys the issuer's weather (issue 48,
``p2p.weather.confirm``): a node without it holds the first weather and asks the issuer and peers,
over real libp2p hosts on 127.0.0.1, for the newest they hold; the newest signed weather wins.

The nodes are the parts a daemon runs (``tests.p2p.test_weather_renewal.Station``: a real store with
its hormones, the validator, ``NetworkWeather`` and the ``WeatherStation`` that consumes weather),
each beside a real host that answers ``/bitterbot/weather-newest/1`` as the daemon's does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope
from crypto.errors import BadSignature
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from p2p.errors import InvalidValue, RequestFailed
from p2p.host import P2PHost, RequestHandler
from p2p.kinds import Received
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.settings import AskSettings
from p2p.topics import WEATHER_TOPIC
from p2p.validation import MessageValidator
from p2p.verdicts import Reason
from p2p.weather import WEATHER, WeatherSequences
from p2p.weather.ask import (
    ANSWER_BURST,
    MAX_ANSWER_BYTES,
    PROTOCOL,
    Heard,
    Signed,
    WeatherAnswers,
    asker,
    read_answer,
    read_request,
)
from p2p.weather.confirm import newest
from tests.p2p.conftest import NOW, weather_envelope
from tests.p2p.test_weather_renewal import MANAGER, Clock, Station

pytestmark = pytest.mark.slow  # real libp2p hosts

QUICK = AskSettings(weather_ask_peers=3, weather_ask_timeout_s=10.0)


def signed(envelope: Envelope) -> Signed:
    return Signed(envelope, WEATHER.parse(envelope.body_map()))


async def serving(identity: Identity, answer: RequestHandler) -> P2PHost:
    """A started host that answers weather requests with ``answer``."""
    validator = MessageValidator(TrustAnchors([MANAGER.public_key]), kinds=every_kind())
    host = P2PHost(identity, validator, PenaltyBox(), HostSettings(listen=LOOPBACK))
    host.serve(PROTOCOL, answer)
    await host.start()
    return host


class Fleet:
    """Hosts started for one test, all stopped at its end."""

    def __init__(self) -> None:
        self.hosts: list[P2PHost] = []

    async def answering(self, identity: Identity, answer: RequestHandler) -> P2PHost:
        self.hosts.append(await serving(identity, answer))
        return self.hosts[-1]

    async def newcomer(self, *peers: P2PHost) -> P2PHost:
        """The fresh node's host, connected to ``peers``."""
        host = await self.answering(Identity.generate(), _nothing)
        for peer in peers:
            await host.connect(peer.listen_addrs[0])
        return host


async def _nothing(_: str, __: bytes) -> bytes:
    return b""


def answering_with(envelope: Envelope) -> RequestHandler:
    """A peer that answers every request with ``envelope`` (an old weather: a liar, or a laggard)."""

    async def answer(_: str, __: bytes) -> bytes:
        return envelope.encode()

    return answer


@pytest.fixture
async def fleet() -> AsyncIterator[Fleet]:
    hosts = Fleet()
    try:
        yield hosts
    finally:
        for host in hosts.hosts:
            with contextlib.suppress(Exception):
                await host.stop()


@pytest.fixture
async def nodes(tmp_path: Path, clock: Clock) -> AsyncIterator[tuple[Station, Station, Station]]:
    """The manager (the issuer), a peer that heard everything, and a newcomer without sequence state."""
    opened = [
        await Station.open(tmp_path / f"{name}.db", identity, clock)
        for name, identity in (("manager", MANAGER), ("peer", Identity.generate()), ("new", Identity.generate()))
    ]
    try:
        yield opened[0], opened[1], opened[2]
    finally:
        for station in opened:
            await station.store.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def storm_then_end(manager: Station, *heard_it_all: Station) -> tuple[Envelope, Envelope, Envelope]:
    """A storm, its renewal (captured by an attacker) and its end one second later, all heard (and the
    end obeyed) by ``heard_it_all``."""
    storm = await manager.broadcast(900, 600, NOW)
    captured = await manager.renew(NOW + 30_000)
    end = await manager.broadcast(0, 1, NOW + 31_000)
    assert captured is not None
    for node in heard_it_all:
        for envelope in (storm, captured, end):
            await node.station.received(_accepted(node, envelope, envelope.ts_ms))
            await node.station.confirmer.settle_held(_nobody)  # its first: nobody else to ask
        assert node.weather.sequences.newest(MANAGER.public_key) == end
    return storm, captured, end


async def _nobody(_: bytes) -> list[Heard]:
    return []


def _accepted(node: Station, envelope: Envelope, now_ms: int) -> Received:
    """What the validator hands the consumer: the envelope accepted, as the daemon's host delivers it."""
    outcome = node.validator.validate(WEATHER_TOPIC, envelope.encode(), MANAGER.peer_id, now_ms)
    assert outcome.reason is Reason.ACCEPTED, outcome.reason
    return Received(outcome.message, envelope, WEATHER_TOPIC)


async def deliver(node: Station, envelope: Envelope, now_ms: int, host: P2PHost) -> list[Signed]:
    """Deliver ``envelope`` to ``node`` as its daemon does, then let it settle what it held by asking
    through ``host``; the weathers it obeyed that way."""
    await node.station.received(_accepted(node, envelope, now_ms))
    return await node.station.confirmer.settle_held(asker(host, QUICK))


async def test_a_replayed_renewal_within_the_window_loses_to_the_issuers_newer_weather(
    nodes: tuple[Station, Station, Station], fleet: Fleet
) -> None:
    """The issuer called the storm off a second after the renewal an attacker captured; replayed to a
    new node 4 s later (inside the 10 s window, so the validator forwards it), the renewal is not
    obeyed: the issuer answers with the end, which the node obeys. Failed before the fix: the storm
    was obeyed (the override and the halt were set)."""
    manager, _, newcomer = nodes
    _, captured, end = await storm_then_end(manager)
    issuer = await fleet.answering(MANAGER, WeatherAnswers(manager.weather.sequences, QUICK).answer)
    host = await fleet.newcomer(issuer)

    await deliver(newcomer, captured, NOW + 34_000, host)
    assert newcomer.override is None and newcomer.validator.halted_until_ms == 0
    assert newcomer.weather.sequences.last(MANAGER.public_key) == WEATHER.parse(end.body_map()).seq
    assert newcomer.station.confirmer.counts.overtaken == 1
    # From now on the sequence is known: the replay again is refused by the validator itself.
    again = newcomer.validator.validate(WEATHER_TOPIC, captured.encode(), MANAGER.peer_id, NOW + 35_000)
    assert again.reason in {Reason.REPLAYED, Reason.STALE_WEATHER}


async def test_the_current_renewal_is_obeyed_after_asking_and_also_when_nobody_answers(
    nodes: tuple[Station, Station, Station], fleet: Fleet
) -> None:
    manager, alone, newcomer = nodes
    await manager.broadcast(900, 600, NOW)
    current = await manager.renew(NOW + 30_000)
    assert current is not None
    issuer = await fleet.answering(MANAGER, WeatherAnswers(manager.weather.sequences, QUICK).answer)

    host = await fleet.newcomer(issuer)
    (obeyed,) = await deliver(newcomer, current, NOW + 30_500, host)
    assert obeyed.envelope == current and newcomer.override is not None and newcomer.override.level == 0.9
    assert newcomer.station.confirmer.counts.overtaken == 0

    # A node with nobody to ask obeys a weather issued just now (the validator's 10 s window): deaf
    # to a real storm would be worse, and the replay it lets through is seconds old at most.
    lonely = await fleet.newcomer()
    (obeyed,) = await deliver(alone, current, NOW + 30_500, lonely)
    assert obeyed.envelope == current and alone.override is not None and alone.override.level == 0.9


async def test_a_peer_answering_an_old_weather_cannot_beat_a_peer_with_the_newer_one(
    nodes: tuple[Station, Station, Station], fleet: Fleet
) -> None:
    """The issuer is not connected; a liar answers with the captured storm renewal (or an older one),
    an honest peer with the end it heard: the end is obeyed, whichever answered first."""
    manager, honest, newcomer = nodes
    storm, captured, end = await storm_then_end(manager, honest)
    liars = [
        await fleet.answering(Identity.generate(), answering_with(captured)),
        await fleet.answering(Identity.generate(), answering_with(storm)),
    ]
    peer = await fleet.answering(Identity.generate(), WeatherAnswers(honest.weather.sequences, QUICK).answer)
    host = await fleet.newcomer(*liars, peer)

    (obeyed,) = await deliver(newcomer, captured, NOW + 34_000, host)
    assert obeyed.envelope == end
    assert newcomer.override is None and newcomer.validator.halted_until_ms == 0


async def test_a_flood_of_questions_is_answered_within_the_askers_rate(fleet: Fleet, tmp_path: Path) -> None:
    """One asker sends 40 questions at once: ``ANSWER_BURST`` are answered (the clock does not move),
    the rest are reset; another asker is still answered. Each answer is one kept envelope, at most
    ``MAX_ANSWER_BYTES``."""
    sequences = WeatherSequences()
    kept = weather_envelope(MANAGER, NOW, seq=3)
    sequences.keep(kept, 3)
    answers = WeatherAnswers(sequences, AskSettings(weather_answers_per_peer_per_s=1.0), now_ms=lambda: NOW)
    server = await fleet.answering(Identity.generate(), answers.answer)
    flooder, other = await fleet.newcomer(server), await fleet.newcomer(server)

    async def ask(host: P2PHost) -> bytes | None:
        try:
            return await host.request(server.peer_id, PROTOCOL, MANAGER.public_key, max_bytes=MAX_ANSWER_BYTES)
        except RequestFailed:
            return None

    got = await asyncio.gather(*(ask(flooder) for _ in range(40)))
    assert sum(a is not None for a in got) == ANSWER_BURST and answers.refused == 40 - ANSWER_BURST
    assert all(read_answer(a, MANAGER.public_key).envelope == kept for a in got if a is not None)  # type: ignore[union-attr]
    assert await ask(other) == kept.encode()


async def test_a_flood_of_held_weathers_costs_one_round_per_issuer(nodes: tuple[Station, Station, Station]) -> None:
    """Thirty fresh weathers of one issuer arrive before the round runs: one is held (the newest), and
    one round asks about it."""
    manager, _, newcomer = nodes
    sent = [await manager.broadcast(900, 600, NOW + i * 1_000) for i in range(30)]
    asked: list[bytes] = []

    async def ask(issuer: bytes) -> list[Heard]:
        asked.append(issuer)
        return []

    for envelope in sent:
        outcome = newcomer.validator.validate(WEATHER_TOPIC, envelope.encode(), MANAGER.peer_id, envelope.ts_ms)
        if outcome.reason is Reason.ACCEPTED:
            await newcomer.station.received(Received(outcome.message, envelope, WEATHER_TOPIC))
    (obeyed,) = await newcomer.station.confirmer.settle_held(ask)
    assert asked == [MANAGER.public_key]
    assert obeyed.envelope == sent[-1]


def test_an_answer_is_the_asked_issuers_signed_weather_or_a_typed_error() -> None:
    good = weather_envelope(MANAGER, NOW, seq=9)
    assert read_answer(good.encode(), MANAGER.public_key) == signed(good)
    assert read_answer(b"", MANAGER.public_key) is None
    with pytest.raises(InvalidValue):  # another key's weather
        read_answer(weather_envelope(Identity.generate(), NOW).encode(), MANAGER.public_key)
    forged = good._replace(sig=bytes(64))
    with pytest.raises(BadSignature):
        read_answer(forged.encode(), MANAGER.public_key)
    with pytest.raises(InvalidValue):
        read_request(b"\x01" * 31)
    assert read_request(MANAGER.public_key) == MANAGER.public_key


def test_the_newest_sequence_wins_whoever_answered_it() -> None:
    held = signed(weather_envelope(MANAGER, NOW, seq=5))
    older, newer = signed(weather_envelope(MANAGER, NOW, seq=4)), signed(weather_envelope(MANAGER, NOW, seq=6))
    assert newest(held, []) == held
    assert newest(held, [Heard("a", older, False), Heard("b", None, False)]) == held
    assert newest(held, [Heard("a", older, False), Heard("b", newer, False), Heard("c", None, True)]) == newer


async def test_a_restarted_node_holds_its_first_weather_though_it_kept_the_sequence(
    tmp_path: Path, clock: Clock, fleet: Fleet
) -> None:
    """Sequences are saved and restored, so what was applied before stays refused; but a storm issued
    and called off while the node was down is newer than what it kept: replayed within seconds, it
    is held and loses to the end the issuer answers with."""
    manager = await Station.open(tmp_path / "manager.db", MANAGER, clock)
    edge = await Station.open(tmp_path / "edge.db", Identity.generate(), clock)
    try:
        first = await manager.broadcast(500, 60, NOW)
        await edge.station.received(_accepted(edge, first, NOW))
        await edge.station.confirmer.settle_held(_nobody)
        kept = edge.weather.sequences.snapshot()
        assert kept == {MANAGER.public_key: WEATHER.parse(first.body_map()).seq}
        restarted = await Station.open(tmp_path / "restarted.db", edge.identity, clock)
        try:
            restarted.weather.restore(0, kept, me=edge.identity.public_key)
            assert not restarted.weather.sequences.confirmed(MANAGER.public_key)
            stale = restarted.validator.validate(WEATHER_TOPIC, first.encode(), MANAGER.peer_id, NOW + 1_000)
            assert stale.reason is Reason.STALE_WEATHER  # the kept sequence still refuses the old one

            # While it was down: a storm, its renewal (captured), and its end.
            _, captured, end = await storm_then_end(manager)
            issuer = await fleet.answering(MANAGER, WeatherAnswers(manager.weather.sequences, QUICK).answer)
            obeyed = await deliver(restarted, captured, NOW + 34_000, await fleet.newcomer(issuer))
            assert restarted.override is None and restarted.validator.halted_until_ms == 0
            assert [o.envelope for o in obeyed] == [end]
        finally:
            await restarted.store.close()
    finally:
        await edge.store.close()
        await manager.store.close()
