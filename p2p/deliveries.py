"""Accepted gossip waiting for the daemon: one bounded lane per kind of message, served by priority.

A flood of skill listings fills the listings lane and nothing else, so weather, revocations,
endorsements and trust attestations are never dropped behind skills; and the consumer takes
weather first, then control messages, attestations, bounties and listings last. A full lane
drops the new message and counts it (``dropped``): the libp2p thread is never blocked.

Lives on the asyncio loop: the host puts through ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from dataclasses import dataclass
from enum import StrEnum

from ground.errors import WiringError
from p2p.messages import (
    KIND_BOUNTY,
    KIND_SKILL_ENDORSEMENT,
    KIND_SKILL_LISTING,
    KIND_SKILL_REVOCATION,
    KIND_TRUST_ATTESTATION,
    KIND_WEATHER,
)
from p2p.validation import Outcome


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message that passed validation, from a peer other than this node."""

    topic: str
    outcome: Outcome
    forwarder: str  # the peer we received it from (the author's peer may be further away)
    received_ms: int


class Lane(StrEnum):
    WEATHER = "weather"
    CONTROL = "control"  # revocations and endorsements: small, and they undo or mark what listings did
    TRUST = "trust"
    BOUNTIES = "bounties"
    LISTINGS = "listings"


#: Served in this order.
PRIORITY = (Lane.WEATHER, Lane.CONTROL, Lane.TRUST, Lane.BOUNTIES, Lane.LISTINGS)

LANE_OF_KIND: dict[str, Lane] = {
    KIND_WEATHER: Lane.WEATHER,
    KIND_SKILL_REVOCATION: Lane.CONTROL,
    KIND_SKILL_ENDORSEMENT: Lane.CONTROL,
    KIND_TRUST_ATTESTATION: Lane.TRUST,
    KIND_BOUNTY: Lane.BOUNTIES,
    KIND_SKILL_LISTING: Lane.LISTINGS,
}


class DeliveryLanes:
    def __init__(self, per_lane: int) -> None:
        if per_lane < 1:
            raise WiringError("a lane holds at least one message")
        self._per_lane = per_lane
        self._lanes: dict[Lane, deque[Delivery]] = {lane: deque() for lane in PRIORITY}
        self._ready = asyncio.Event()
        self.dropped: Counter[Lane] = Counter()

    def put_nowait(self, delivery: Delivery) -> bool:
        """Queue ``delivery`` in its lane; False (and counted) when that lane is full."""
        envelope = delivery.outcome.envelope
        lane = LANE_OF_KIND.get(envelope.kind, Lane.LISTINGS) if envelope is not None else Lane.LISTINGS
        queue = self._lanes[lane]
        if len(queue) >= self._per_lane:
            self.dropped[lane] += 1
            return False
        queue.append(delivery)
        self._ready.set()
        return True

    async def get(self) -> Delivery:
        """The next delivery, from the first non-empty lane in ``PRIORITY``."""
        while True:
            for lane in PRIORITY:
                queue = self._lanes[lane]
                if queue:
                    return queue.popleft()
            self._ready.clear()
            await self._ready.wait()

    def qsize(self) -> int:
        return sum(len(queue) for queue in self._lanes.values())

    def sizes(self) -> dict[str, int]:
        return {lane.value: len(queue) for lane, queue in self._lanes.items()}
