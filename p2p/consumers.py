"""Who consumes each kind of gossip message once the validator accepted it.

The part that owns a kind registers its consumer (the network part its weather and trust
attestations, the market part its listings, revocations, bounties and endorsements); the
delivery loop hands each accepted message to its kind's consumer. A kind is consumed once: a
second registration is a wiring error, and a kind nobody consumes is counted, not dropped silently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from crypto.envelope import Envelope
from ground.errors import WiringError


@dataclass(frozen=True, slots=True)
class Received:
    """One accepted gossip message: its typed body, the envelope it came in, and its author's key."""

    message: Any
    envelope: Envelope
    topic: str

    @property
    def author(self) -> bytes:
        return self.envelope.author


Consumer = Callable[[Received], Awaitable[None]]


class GossipConsumers:
    def __init__(self) -> None:
        self._by_kind: dict[str, Consumer] = {}
        #: Accepted messages of a kind no part consumes (a part that is off), by kind.
        self.unconsumed: dict[str, int] = {}

    def register(self, kind: str, consumer: Consumer) -> None:
        if kind in self._by_kind:
            raise WiringError(f"gossip of kind {kind!r} already has a consumer")
        self._by_kind[kind] = consumer

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(self._by_kind)

    async def dispatch(self, received: Received) -> bool:
        """Hand ``received`` to its kind's consumer; False when none is registered."""
        consumer = self._by_kind.get(received.envelope.kind)
        if consumer is None:
            self.unconsumed[received.envelope.kind] = self.unconsumed.get(received.envelope.kind, 0) + 1
            return False
        await consumer(received)
        return True
