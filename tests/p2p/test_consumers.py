"""Each accepted gossip kind goes to the one consumer its owning part registered."""

from __future__ import annotations

import pytest

from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from ground.errors import WiringError
from p2p.consumers import GossipConsumers, Received
from p2p.messages import KIND_BOUNTY, KIND_WEATHER


def received(kind: str) -> Received:
    author = Identity.generate()
    envelope = seal_envelope(author, kind, pack_body({"x": 1}), now_ms=1_000)
    return Received({"x": 1}, envelope, "topic")


async def test_a_message_reaches_its_kinds_consumer_only_and_an_unowned_kind_is_counted() -> None:
    consumers = GossipConsumers()
    seen: list[tuple[str, bytes]] = []

    async def weather(r: Received) -> None:
        seen.append(("weather", r.author))

    consumers.register(KIND_WEATHER, weather)
    message = received(KIND_WEATHER)
    assert await consumers.dispatch(message) is True
    assert seen == [("weather", message.envelope.author)]
    assert await consumers.dispatch(received(KIND_BOUNTY)) is False  # the market part is not running
    assert await consumers.dispatch(received(KIND_BOUNTY)) is False
    assert consumers.unconsumed == {KIND_BOUNTY: 2}
    assert seen == [("weather", message.envelope.author)]
    assert consumers.kinds == {KIND_WEATHER}


def test_a_kind_has_one_consumer() -> None:
    consumers = GossipConsumers()

    async def one(r: Received) -> None:
        return None

    consumers.register(KIND_WEATHER, one)
    with pytest.raises(WiringError, match="already has a consumer"):
        consumers.register(KIND_WEATHER, one)
