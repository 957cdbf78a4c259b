"""What the market's gossip consumers need of the running node, handed in by the part that
registers them (``marketplace.gossip.kinds.register_market_gossip``): the store, trust as of the
last round, the bounds on what peers may fill, and the counters ``status`` and ``peers`` report.
And what a kind's module declares so that it is found (``MarketKind``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ground.events import get_logger
from marketplace.gossip.received_quota import KeyStanding, TableBound
from memory.governance.peer_quota import PeerContentQuota
from memory.intake.store import IntakeStore
from p2p.kinds import GossipKind, Received
from p2p.trust.book import TrustLevel

log = get_logger("node.p2p")  # one logger for everything peers sent, as ``peers`` reports it


@dataclass(frozen=True, slots=True)
class MarketSink:
    store: Callable[[], IntakeStore]
    level_of: Callable[[bytes], TrustLevel]  # a key's level as of the last trust round
    standing_of: KeyStanding  # a hex key's rank, least trusted first to be evicted
    me_hex: str  # this node's key: its own rows are never counted against a bound
    content_quota: PeerContentQuota  # crystals from peers
    listings_bound: TableBound
    bounties_bound: TableBound
    ingested: dict[str, int]  # by kind of thing stored, since start
    evicted: dict[str, int]  # what the bounds deleted, since start


@dataclass(frozen=True, slots=True)
class MarketKind:
    """A kind the market speaks and what this node does with an accepted one. Each kind's module
    declares one as ``SPOKEN`` and ``marketplace.gossip.kinds`` finds it there, so a new kind is its
    own module and an example in ``tests/p2p/test_wire_messages.py``, nothing else."""

    kind: GossipKind[Any]
    consume: Callable[[MarketSink, Received], Awaitable[None]]
