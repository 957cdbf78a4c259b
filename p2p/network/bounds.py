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
from dataclasses import dataclass

#: An IPv6 host usually holds a whole /64, so it counts as one address.
IPV6_PREFIX = 64


@dataclass(frozen=True, slots=True)
class ConnectionBounds:
    max_connections: int = 128  # established and being established, both directions
    max_inbound: int = 96  # of those, inbound: the rest stays free for the dials this node makes
    per_ip: int = 8  # inbound, from one IPv4 address or IPv6 /64
    per_peer: int = 2  # connections with one peer
    max_streams: int = 1024
    streams_per_peer: int = 64  # inbound, held at once; also the burst of the rate below
    stream_opens_per_s: float = 8.0  # inbound, from one peer: past this it is flooding and is banned
    handshake_s: float = 10.0  # for a connection's security and muxer handshake, and a stream's protocol


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
