"""The registry of gossip kinds: each accepted kind goes to the one consumer its owner registered,
a kind is declared once, and a topic the validator cannot bound is a wiring error."""

from __future__ import annotations

import pytest

from crypto.anchors import TrustAnchors
from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from ground.errors import WiringError
from marketplace.gossip.bounty import BOUNTY_KIND, KIND_BOUNTY
from marketplace.gossip.kinds import every_kind
from marketplace.gossip.listing import LISTING, LISTING_KIND
from p2p.kinds import GossipKind, GossipKinds, Lane, Received
from p2p.topics import BOUNTIES_TOPIC, SKILLS_TOPIC, TRUST_TOPIC, WEATHER_TOPIC
from p2p.validation import MessageValidator
from p2p.weather import KIND_WEATHER, WeatherSequences, weather_kind


def received(kind: str) -> Received:
    author = Identity.generate()
    envelope = seal_envelope(author, kind, pack_body({"x": 1}), now_ms=1_000)
    return Received({"x": 1}, envelope, "topic")


async def test_a_message_reaches_its_kinds_consumer_only_and_an_unconsumed_kind_is_counted() -> None:
    kinds = GossipKinds()
    seen: list[tuple[str, bytes]] = []

    async def weather(r: Received) -> None:
        seen.append(("weather", r.author))

    kinds.register(weather_kind(WeatherSequences()), weather)
    kinds.register(BOUNTY_KIND)  # validated and forwarded, consumed by nobody (the market part is off)
    message = received(KIND_WEATHER)
    assert await kinds.dispatch(message) is True
    assert seen == [("weather", message.envelope.author)]
    assert await kinds.dispatch(received(KIND_BOUNTY)) is False
    assert await kinds.dispatch(received(KIND_BOUNTY)) is False
    assert kinds.unconsumed == {KIND_BOUNTY: 2}
    assert seen == [("weather", message.envelope.author)]


def test_a_kind_is_registered_once() -> None:
    kinds = GossipKinds()
    kinds.register(LISTING_KIND)
    with pytest.raises(WiringError, match="already registered"):
        kinds.register(LISTING_KIND)


def test_the_topics_come_from_the_kinds_registered() -> None:
    kinds = every_kind()
    assert set(kinds.topics) == {SKILLS_TOPIC, WEATHER_TOPIC, TRUST_TOPIC, BOUNTIES_TOPIC}
    assert kinds.names_on(SKILLS_TOPIC) == {"skill.listing", "skill.revocation", "skill.endorsement"}
    assert kinds.names_on("bitterbot/unknown/1") == frozenset()
    assert GossipKinds().topics == ()  # a validator with no kinds subscribes to nothing


def test_a_topic_without_a_rate_cannot_be_spoken() -> None:
    kinds = GossipKinds()
    kinds.register(GossipKind("skill.listing", "bitterbot/unbounded/1", LISTING, Lane.LISTINGS))
    with pytest.raises(WiringError, match="no rate is configured"):
        MessageValidator(TrustAnchors(), kinds=kinds).topics()
