"""Accepted gossip waiting for the daemon: bounded lanes (each kind declares its own), served by priority.

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

from ground.errors import WiringError
from p2p.kinds import Lane
from p2p.validation import Outcome


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message that passed validation, from a peer other than this node."""

    topic: str
    outcome: Outcome
    forwarder: str  # the peer we received it from (the author's peer may be further away)
    received_ms: int


#: Served in this order.
PRIORITY = (Lane.WEATHER, Lane.CONTROL, Lane.TRUST, Lane.BOUNTIES, Lane.LISTINGS)


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
        kind = delivery.outcome.kind
        lane = kind.lane if kind is not None else Lane.LISTINGS
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
