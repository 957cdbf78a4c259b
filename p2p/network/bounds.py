"""How much of this node any remote peer may hold: the bounds, and the counting that needs no libp2p
(``p2p.network.resources`` applies them to the library's resource manager).

The defaults follow go-libp2p's resource manager in spirit (a few connections per IP, streams per
peer well below the total) scaled to a small edge machine: measured with ``python -m bench
connection_flood``, a stranger's 1,000 connections or 10,000 streams then cost the node a bounded
number of file descriptors and megabytes, and weather from its management node still arrives.
"""

from __future__ import annotations

import ipaddress
import threading
from collections import Counter
from typing import Self

from pydantic import Field, model_validator

from ground.settings import Section, SettingError

#: An IPv6 host usually holds a whole /64, so it counts as one address.
IPV6_PREFIX = 64


class ConnectionBounds(Section):
    """What any remote peer may hold of this node: connections in all and of them inbound (the rest
    stays free for the dials this node makes), inbound connections per IP (an IPv6 /64 is one),
    connections per peer, inbound streams in all and per peer (also the burst of the rate), how fast
    a peer may open them (past it, it is flooding and is banned), and how long a connection's
    handshake or a stream's protocol choice may take."""

    max_connections: int = Field(default=128, ge=8, le=100_000)
    """What any remote peer may hold of this node (p2p/network/resources.py). Connections in all (both
    directions, being set up or up) and of them inbound, so that strangers filling every inbound slot
    leave room for this node's own dials; inbound connections from one IP address (an IPv6 /64 counts
    as one address; several people behind one home NAT share it); connections with one peer; inbound
    streams in all and from one peer (one past either is reset at once); how many streams a second one
    peer may open (with a burst of streams_per_peer; a peer past it is flooding, and is banned for
    ban_minutes and disconnected); and the seconds a connection's handshake, or a stream's choice of
    protocol, may take before it is dropped.
    """
    max_inbound_connections: int = Field(default=96, ge=1, le=100_000)
    connections_per_ip: int = Field(default=8, ge=1, le=100_000)
    connections_per_peer: int = Field(default=2, ge=1, le=64)
    max_streams: int = Field(default=1_024, ge=64, le=1_000_000)
    streams_per_peer: int = Field(default=64, ge=8, le=100_000)
    stream_opens_per_peer_per_s: float = Field(default=8.0, gt=0, le=100_000)
    handshake_s: float = Field(default=10.0, ge=1, le=120)

    @model_validator(mode="after")
    def _inbound_within_total(self) -> Self:
        if self.max_inbound_connections > self.max_connections:
            raise SettingError("need max_inbound_connections <= max_connections")
        return self


class PeerStoreBounds(Section):
    """The peers this node remembers across restarts (and whose relays it notes), and of them, how
    many one neighbour may have told of that a handshake has not yet proven: dialled, not kept."""

    peer_store_size: int = Field(default=1_000, ge=10, le=100_000)
    """Peers this node remembers (in peers_file) to dial first at the next start, and as many peers'
    neighbours, through which a peer behind a NAT is tried (4 each at most). [10, 100000]."""
    peer_store_per_source: int = Field(default=64, ge=1, le=100_000)
    """Peers one neighbour may have told of and that no handshake has proved yet: dialled, never kept.
    [1, 100000]."""


class RefusalCounts:
    """Refusals by reason, counted on the libp2p thread and read from the asyncio one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, reason: str) -> None:
        with self._lock:
            self._counts[reason] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


def address_key(ip: str) -> str | None:
    """The address a connection counts against: the IPv4 address, or the IPv6 /64. None if unparsable."""
    try:
        parsed = ipaddress.ip_address(ip)
    except ValueError:
        return None
    if parsed.version == 6:
        return str(ipaddress.ip_network(f"{parsed}/{IPV6_PREFIX}", strict=False))
    return str(parsed)
