"""The network's settings: the host's (where it listens, whom it dials first, its gossip mesh
degrees, the accepted messages it holds per lane, with its connection bounds and relaying),
relaying's and discovery's. Here rather than beside ``p2p.host``, ``p2p.network.relay`` and
``p2p.network.discovery``: reading the config must not load trio, multiaddr, numpy or psutil,
which those import (``tests/p2p/test_settings.py``)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from ground.settings import SettingError
from p2p.network.bounds import ConnectionBounds, PeerStoreBounds

#: One loopback address on a port the system picks: what a host in a test, a benchmark or a tool listens on.
LOOPBACK = ["/ip4/127.0.0.1/tcp/0"]


class RelaySettings(PeerStoreBounds):
    """Through NAT: a reachable node may relay for nodes behind NATs, within these bounds;
    ``reachability = "auto"`` asks the bootstrap peers to dial back (AutoNAT), and behind a NAT
    reserves a slot on those that relay."""

    relay_service: bool = False
    """Through NAT (p2p/network/relay.py). A reachable node may relay for nodes behind NATs (circuit relay v2):
    at most this many reservations held, circuits open at once, seconds and bytes per circuit. The
    relay sees who talks to whom and how much, never what (noise runs end to end through it).
    """
    relay_max_reservations: int = Field(default=32, ge=1, le=10_000)
    relay_max_circuits: int = Field(default=16, ge=1, le=10_000)
    relay_circuit_s: int = Field(default=120, ge=10, le=86_400)
    relay_circuit_bytes: int = Field(default=1 << 20, ge=65_536, le=2**34)
    reachability: Literal["auto", "public", "private"] = "auto"
    """"auto": ask the bootstrap peers to dial this node back (AutoNAT); when they cannot, it is behind a
    NAT and reserves a slot on each bootstrap peer that relays. "public" or "private" says it outright.
    """


class DiscoverySettings(PeerStoreBounds):
    """Finding the network from one address: the connections this node keeps up to by asking its
    neighbours for theirs, and how often it asks while below that."""

    target_peers: int = Field(default=8, ge=0, le=1_000)
    """Finding the network from one address (p2p/network/discovery.py): the node keeps up to target_peers
    connections by asking a neighbour for a sample of its own every discover_s seconds while below it,
    and keeps whom it knows (at most peer_store_size, in peers_file) to dial first at the next start.
    It also remembers, for as many peers, which neighbours said they are connected to each (4 at most):
    a peer behind a NAT that cannot be dialled is tried through them.
    What a neighbour tells is dialled only where this node is itself on that network (no private,
    link-local, loopback or multicast address of elsewhere), at most peer_store_per_source peers per
    neighbour; only an address a handshake proved is kept in peers_file.
    """
    discover_s: float = Field(default=15.0, ge=1, le=3_600)


class HostSettings(ConnectionBounds, RelaySettings):
    """The host's settings: where it listens, whom it dials first, its gossip mesh degrees and the
    accepted messages it holds per lane (``p2p.deliveries``), with its connection bounds and relaying."""

    listen: list[str] = Field(default_factory=lambda: ["/ip4/0.0.0.0/tcp/4001"])
    """Addresses to listen on (multiaddrs; TCP, noise-encrypted). Port 0 picks a free port."""
    bootstrap: list[str] = Field(default_factory=list)
    """Peers to connect to at start and whenever the connection drops, as full multiaddrs
    with their peer id: "/ip4/192.168.1.20/tcp/4001/p2p/12D3KooW...". `bitterbot-node status` prints a node's.
    """
    mdns: bool = False
    """Find peers on the local network by mDNS."""
    degree: int = Field(default=6, ge=1, le=50)
    """Gossip mesh degree: target, lower and upper bound (degree_low <= degree <= degree_high)."""
    degree_low: int = Field(default=4, ge=1, le=50)
    degree_high: int = Field(default=12, ge=1, le=100)
    delivery_queue: int = Field(default=1024, ge=16, le=1_000_000)
    """Accepted messages waiting to be handled, per lane (weather, revocations and endorsements,
    attestations, bounties, listings: a flood of one never drops another); past it, dropped
    and counted (`bitterbot_p2p_queue_dropped_total` by lane). [16, 1000000].
    """

    @field_validator("listen", "bootstrap")
    @classmethod
    def _multiaddrs(cls, addrs: list[str]) -> list[str]:
        for addr in addrs:
            if not addr.startswith("/"):
                raise SettingError(f"{addr!r} is not a multiaddr (like /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW...)")
        return addrs

    @model_validator(mode="after")
    def _degrees_ordered(self) -> Self:
        if not self.degree_low <= self.degree <= self.degree_high:
            raise SettingError("need degree_low <= degree <= degree_high")
        return self
