"""What any remote peer may hold of this node, applied to py-libp2p: connections in total, inbound, per
IP and per peer, and streams in total and per peer ("bounded per connection", issue 31).

py-libp2p 0.8.1 ships a resource manager and a connection config, and ``new_host`` makes one of each
with its own defaults (1,000 connections, 10,000 streams, 250 inbound, no per-IP or per-peer stream
bound). Two things the library lacks are added here, beside it, without touching its internals:

- **per IP**: every inbound connection, pending or established, from one IPv4 address or IPv6 /64
  counts against ``connections_per_ip``. The library's per-subnet limiter only knows networks named in advance;
  this one keys on the address the connection came from. What this node dials is its own choice and
  is not counted.
- **streams per peer**: inbound streams from one peer count against ``streams_per_peer``, on top of
  the library's total, and their opening against a rate; a peer past the rate is flooding and is
  banned (``BoundedResources``). A stream past a bound is reset at once. The library's own stream
  semaphore is left off: with it, a stream past the total waits for a slot instead, so a flood of
  streams becomes an unbounded queue of waiting tasks.

An inbound circuit through a relay comes over the relay's connection, so it counts against the
relay's address.

Each refusal is counted by reason, for ``status`` (``p2p.limits``). Imported on the libp2p thread
only: importing libp2p costs a CLI process more than a second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from libp2p.network.config import ConnectionConfig
from libp2p.rcmgr import Direction, ResourceManager
from libp2p.rcmgr.cidr_limits import CIDRLimiter
from libp2p.rcmgr.connection_limits import ConnectionLimits
from libp2p.rcmgr.manager import ConnectionScope, ResourceLimits

from ground.rates import RateLimit, TokenBuckets
from p2p.network.bounds import ConnectionBounds, RefusalCounts, address_key


class PerAddressLimiter(CIDRLimiter):
    """At most ``limit`` connections from one address at a time. The library calls ``allow`` and
    ``acquire`` when a connection is admitted and ``release`` when it ends, each with its address.

    A connection is admitted twice: before its handshake (no peer id yet) and after it, when the
    library takes a second scope before it lets the first go. ``upgrading`` is set around that second
    admission, which may then go one over, so that ``limit`` connections from one address can all
    finish their handshakes."""

    def __init__(self, limit: int) -> None:
        super().__init__(None)
        self._limit = limit
        self.refused = False  # whether the last admission was refused here
        self._held: dict[str, int] = {}
        self._guard = threading.Lock()
        self.upgrading = False

    def _room(self, key: str) -> bool:
        return self._held.get(key, 0) < self._limit + (1 if self.upgrading else 0)

    def allow(self, endpoint_ip: str | None) -> bool:
        key = address_key(endpoint_ip) if endpoint_ip else None
        with self._guard:
            allowed = key is None or self._room(key)
        self.refused = not allowed
        return allowed

    def acquire(self, endpoint_ip: str | None) -> bool:
        key = address_key(endpoint_ip) if endpoint_ip else None
        if key is None:
            return True
        with self._guard:
            allowed = self._room(key)
            if allowed:
                self._held[key] = self._held.get(key, 0) + 1
        self.refused = not allowed
        return allowed

    def release(self, endpoint_ip: str | None) -> None:
        key = address_key(endpoint_ip) if endpoint_ip else None
        if key is None:
            return
        with self._guard:
            held = self._held.get(key, 0) - 1
            if held > 0:
                self._held[key] = held
            else:
                self._held.pop(key, None)  # forgotten at zero: the map holds only live addresses

    def addresses(self) -> int:
        with self._guard:
            return len(self._held)


class BoundedResources(ResourceManager):
    """The library's resource manager with the per-IP and per-peer stream bounds added.

    Inbound streams from a peer are bounded twice: how many it holds at once (``streams_per_peer``)
    and how fast it opens them (``stream_opens_per_peer_per_s``, with a burst of ``streams_per_peer``). A peer
    past the rate is flooding, since no honest peer opens streams that fast, and ``on_flood`` is told
    (with its peer id) so the host bans it and closes its connection. Refusing alone would not bound
    memory: the muxer keeps a refused stream's buffered bytes for a minute, and 10,000 streams of
    4 KB each, each refused at once, grew a node by 65 MB."""

    def __init__(self, bounds: ConnectionBounds, on_flood: Callable[[str], None] | None = None) -> None:
        super().__init__(
            limits=ResourceLimits(max_connections=bounds.max_connections, max_streams=bounds.max_streams),
            connection_limits=ConnectionLimits(
                max_pending_inbound=bounds.max_inbound_connections,
                max_pending_outbound=bounds.max_connections,
                max_established_inbound=bounds.max_inbound_connections,
                max_established_outbound=bounds.max_connections,
                max_established_per_peer=bounds.connections_per_peer,
                max_established_total=bounds.max_connections,
            ),
            enable_metrics=False,
            # Off: on exhaustion it changes the limits above at run time, which an operator did not set.
            enable_graceful_degradation=False,
            enable_memory_pooling=False,
        )
        self.bounds = bounds
        self.refusals = RefusalCounts()
        self.per_address = PerAddressLimiter(bounds.connections_per_ip)
        self.cidr_limiter = self.per_address
        self._inbound_streams: dict[str, int] = {}
        # Kept for as many peers as there may be connections, and twice that: a flood of fresh peer ids
        # empties it (ground.rates), which costs a flooder nothing it could not have had by reconnecting.
        self._opens = TokenBuckets(
            RateLimit(bounds.stream_opens_per_peer_per_s, bounds.streams_per_peer), max_keys=2 * bounds.max_connections
        )
        self._on_flood = on_flood

    def open_connection(
        self, peer_id: Any | None = None, endpoint_ip: str | None = None, direction: str = "inbound"
    ) -> ConnectionScope | None:
        # The per-IP bound is for who comes in; a dial out is admitted without an address to count.
        inbound = direction == "inbound"
        self.per_address.upgrading = peer_id is not None  # the handshake's scope is still held
        self.per_address.refused = False
        try:
            scope = super().open_connection(peer_id, endpoint_ip if inbound else None, direction)
        finally:
            self.per_address.upgrading = False
        if scope is None and inbound:
            self.refusals.add("connections_per_ip" if self.per_address.refused else "connections")
        return scope

    def acquire_stream(self, peer_id: str, direction: Direction) -> bool:
        if direction != Direction.INBOUND:
            return super().acquire_stream(peer_id, direction)
        with self._lock:
            if not self._opens.allow(peer_id.encode(), int(time.monotonic() * 1000)):
                self.refusals.add("stream_opens_rate")
                if self._on_flood is not None:
                    self._on_flood(peer_id)
                return False
            held = self._inbound_streams.get(peer_id, 0)
            if held >= self.bounds.streams_per_peer:
                self.refusals.add("streams_per_peer")
                return False
            if not super().acquire_stream(peer_id, direction):
                self.refusals.add("streams")
                return False
            self._inbound_streams[peer_id] = held + 1
            return True

    def release_stream(self, peer_id: str, direction: Direction) -> None:
        super().release_stream(peer_id, direction)
        if direction != Direction.INBOUND:
            return
        with self._lock:
            held = self._inbound_streams.get(peer_id, 0) - 1
            if held > 0:
                self._inbound_streams[peer_id] = held
            else:
                self._inbound_streams.pop(peer_id, None)

    def report(self) -> dict[str, Any]:
        """What ``status`` shows: what is held now, and what was refused since the start, by reason."""
        with self._lock:
            held = {
                "connections": self._current_connections,
                "streams": self._current_streams,
                "addresses": self.per_address.addresses(),
                "peers_with_streams": len(self._inbound_streams),
            }
        return {"held": held, "refused": self.refusals.snapshot()}


def connection_config(bounds: ConnectionBounds) -> ConnectionConfig:
    """The swarm's own caps, from the same bounds: it keeps ``max_connections - max_inbound_connections`` slots for
    dials out, and gives a handshake and a stream's protocol negotiation ``handshake_s``."""
    reserved_for_dials = bounds.max_connections - bounds.max_inbound_connections
    return ConnectionConfig(
        max_connections=bounds.max_connections,
        min_connections=reserved_for_dials,
        # Its auto-dialer reads the watermarks, and it refuses them out of order: min <= low <= high <= max.
        low_watermark=max(reserved_for_dials, min(100, bounds.max_connections)),
        high_watermark=bounds.max_connections,
        max_connections_per_peer=bounds.connections_per_peer,
        inbound_upgrade_timeout=bounds.handshake_s,
        inbound_stream_protocol_negotiation_timeout=bounds.handshake_s,
    )
