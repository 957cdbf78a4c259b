"""Hole punching (DCUtR) that a stranger cannot aim (issue 48).

Over a relayed connection, the far end's CONNECT names the addresses this node then dials, from its
own listen port: py-libp2p dialled every one it named, and added them to the peer store, so a
stranger reaching the node through any relay could make it connect into its own LAN or host, as
often as it asked. Here a punch dials only public addresses (a peer on this node's own network is
reached by a direct dial, never a punch), the peer's CONNECT addresses together with what its
identify told, at most ``MAX_PUNCH_ADDRS``; and each peer gets at most ``PUNCHES_PER_PEER`` punches
per ``PUNCH_WINDOW_S``, the library's own budget for the punches it starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, cast

import multiaddr

from ground.events import get_logger
from p2p.network.scope import LocalNetworks, may_dial

log = get_logger("p2p.punch")
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


class PunchView:
    """The host as DCUtR sees it: its peer store answers a peer's public addresses only (at most
    ``MAX_PUNCH_ADDRS``; during a punch, that punch's targets) and takes only public addresses from a
    CONNECT. Everything else is the host's."""

    def __init__(self, host: Any) -> None:
        self._host = host
        self.punching: dict[Any, list[multiaddr.Multiaddr]] = {}  # peer ID -> the targets of its punch now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)

    def get_peerstore(self) -> _PublicAddrs:
        return _PublicAddrs(self._host.get_peerstore(), self.punching)


class _PublicAddrs:
    def __init__(self, peerstore: Any, punching: dict[Any, list[multiaddr.Multiaddr]]) -> None:
        self._peerstore, self._punching = peerstore, punching

    def __getattr__(self, name: str) -> Any:
        return getattr(self._peerstore, name)

    def addrs(self, peer: Any) -> list[multiaddr.Multiaddr]:
        if peer in self._punching:
            return list(self._punching[peer])
        return [multiaddr.Multiaddr(a) for a in punch_targets((), (str(a) for a in self._peerstore.addrs(peer)))]

    def add_addrs(self, peer: Any, addrs: Sequence[multiaddr.Multiaddr], ttl: int) -> None:
        public = punch_targets((str(a) for a in addrs), ())
        if public:
            self._peerstore.add_addrs(peer, [multiaddr.Multiaddr(a) for a in public], ttl)


def guarded_dcutr(host: Any) -> Any:
    """py-libp2p's DCUtR on ``host``, aimed only as this module says."""
    import trio
    from libp2p.relay.circuit_v2.dcutr import DCUtRProtocol

    class GuardedDCUtR(DCUtRProtocol):
        def __init__(self, view: PunchView) -> None:
            super().__init__(cast(Any, view))  # a host in all but its peer store
            self._view = view
            self._budget = PunchBudget()

        async def _perform_hole_punch(self, peer_id: Any, addrs: list[Any], as_responder: bool = False) -> bool:
            if not self._budget.allow(str(peer_id), trio.current_time()):
                log.info("p2p.punch_refused", peer=str(peer_id), reason="budget")
                return False
            known = (str(a) for a in self._view.get_peerstore().addrs(peer_id))
            targets = [multiaddr.Multiaddr(a) for a in punch_targets((str(a) for a in addrs), known)]
            self._view.punching[peer_id] = targets  # what the library adds from the peer store is these
            try:
                result: bool = await super()._perform_hole_punch(peer_id, targets, as_responder)
                return result
            finally:
                self._view.punching.pop(peer_id, None)

    dcutr = GuardedDCUtR(PunchView(host))
    host._dcutr_protocol = dcutr  # the host tells it of disconnections (the library set it on the view)
    return dcutr
