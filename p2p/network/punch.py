"""Hole punching (DCUtR): the rules, apart from the library (``p2p.network.dcutr`` applies them).

Who punches (issue 51). DCUtR's spec has the end a relayed connection came in to open the exchange;
py-libp2p 0.8.1 has both ends open one whenever they see a relayed connection, and when their two
exchanges overlapped, each end dialled the same four-tuple twice (listen port to listen port, in
two noise roles), and the second dial failed to bind (EADDRNOTAVAIL, an error in the log, at every
round): with both ends made to open at once, 2 of 6 punches between home routers never landed.
``opens_punch`` says which end opens, the same answer at both ends.

Where it dials (issue 48). Over a relayed connection, the far end's CONNECT names the addresses
this node then dials, from its own listen port: py-libp2p dialled every one it named, and added
them to the peer store, so a stranger reaching the node through any relay could make it connect
into its own LAN or host, as often as it asked. Here a punch dials only public addresses (a peer
on this node's own network is reached by a direct dial, never a punch), the peer's CONNECT
addresses together with what its identify told, at most ``MAX_PUNCH_ADDRS``; and each peer gets at
most ``PUNCHES_PER_PEER`` punches per ``PUNCH_WINDOW_S`` (as the opening end or the answering one),
the library's own budget for the punches it starts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from p2p.network.scope import LocalNetworks, may_dial

MAX_PUNCH_ADDRS = 8
PUNCHES_PER_PEER = 3
PUNCH_WINDOW_S = 300.0
#: No network counts as the node's own: only public addresses are punched to.
_NOWHERE = LocalNetworks((), loopback=False)


def punch_targets(offered: Iterable[str], known: Iterable[str], limit: int = MAX_PUNCH_ADDRS) -> list[str]:
    """The addresses a punch dials: the public ones of ``offered`` (the peer's CONNECT), then of
    ``known`` (its identify), without circuits or repeats, at most ``limit``."""
    out: list[str] = []
    for addr in (*offered, *known):
        if "/p2p-circuit" not in addr and may_dial(addr, _NOWHERE) and addr not in out:
            out.append(addr)
    return out[:limit]


class PunchBudget:
    """At most ``limit`` punches per peer in any ``window_s``; at most ``peers`` peers remembered (the
    least recently punched forgotten first), so many fresh keys cost bounded memory."""

    def __init__(self, limit: int = PUNCHES_PER_PEER, window_s: float = PUNCH_WINDOW_S, peers: int = 1_000) -> None:
        self._limit, self._window_s, self._peers = limit, window_s, peers
        self._recent: dict[str, list[float]] = {}

    def allow(self, peer: str, now_s: float) -> bool:
        recent = [t for t in self._recent.pop(peer, []) if now_s - t < self._window_s]
        allowed = len(recent) < self._limit
        self._recent[peer] = [*recent, now_s] if allowed else recent
        while len(self._recent) > self._peers:
            del self._recent[next(iter(self._recent))]
        return allowed


def opens_punch(relayed: Collection[str], me: str, peer: str) -> bool:
    """Whether this end (peer id ``me``) opens the DCUtR exchange with ``peer``, given the directions
    ("inbound", "outbound", or anything else when unknown) of its relayed connections to it. The end
    the relayed connection came in to opens it (the spec's rule, which go-libp2p and rust-libp2p
    follow); when each dialled the other through a relay, or the direction is unknown, the end whose
    peer id sorts first. Both ends answer the same, so one exchange runs at a time."""
    inbound, outbound = "inbound" in relayed, "outbound" in relayed
    if inbound != outbound:
        return inbound
    return me < peer


class Told:
    """Peers something was already said of (at most ``peers``, the oldest forgotten first): a failed
    punch is logged at info once per peer, not once per try."""

    def __init__(self, peers: int = 1_000) -> None:
        self._peers = peers
        self._told: dict[str, None] = {}

    def first(self, peer: str) -> bool:
        """True the first time ``peer`` is named (or after it was forgotten), False after."""
        if peer in self._told:
            return False
        self._told[peer] = None
        while len(self._told) > self._peers:
            del self._told[next(iter(self._told))]
        return True

    def forget(self, peer: str) -> None:
        self._told.pop(peer, None)
