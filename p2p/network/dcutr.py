"""py-libp2p's DCUtR on our host, held to the rules of ``p2p.network.punch`` (trio side).

- One end opens the exchange (``opens_punch``); a CONNECT that arrives while this end's own
  exchange with that peer runs is refused, so no two punches dial one four-tuple.
- A punch dials public addresses only, at most 8, through a view of the host whose peer store
  answers only those; each peer gets ``PUNCHES_PER_PEER`` per ``PUNCH_WINDOW_S`` at either end, the
  opening end's plain dial before its exchange (the spec's unilateral upgrade) included: the library
  dialled it again every 2 s once its own attempts were spent.
- A punch that does not land is said once per peer, at info (``p2p.punch_failed``); the library's
  warnings of it, one per try and per end, are kept for debugging. A punch that lands is said at
  info with its time (``p2p.punch_landed``); ``counts`` is what status shows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import multiaddr

from ground.events import get_logger
from p2p.network.punch import PunchBudget, Told, opens_punch, punch_targets

log = get_logger("p2p.punch")
LIBRARY_LOGGER = "libp2p.relay.circuit_v2.dcutr"
#: How the library says, at warning and on every try, that a punch did not land.
_LIBRARY_FAILURE_WORDS = (
    "Failed to establish direct connection",
    "Maximum hole punch attempts",
    "No direct addresses found",
    "No addresses to try",
    "Timeout in DCUtR protocol",
)


@dataclass
class PunchCounts:
    """Punches this node took part in (opening or answering) since it started, and how they ended."""

    tried: int = 0
    landed: int = 0
    failed: int = 0


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


def relayed_directions(host: Any, peer: Any) -> list[str]:
    """The directions ("inbound", "outbound", "unknown") of this host's relayed connections to ``peer``."""
    found = []
    for connection in host.get_network().get_connections(peer):
        if _through_relay(connection):
            direction = getattr(connection, "direction", None)
            found.append(str(getattr(direction, "name", "unknown")).lower())
    return found


def _through_relay(connection: Any) -> bool:
    try:
        return any("/p2p-circuit" in str(a) for a in connection.get_transport_addresses())
    except Exception:  # noqa: BLE001 - a connection closing while we look
        return False


class _LibraryFailureWords(logging.Filter):
    """The library's warnings of a punch that did not land, kept at debug: ours say it once per peer."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or not str(record.msg).startswith(_LIBRARY_FAILURE_WORDS):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def _quiet_library_failures() -> None:
    library = logging.getLogger(LIBRARY_LOGGER)
    if not any(isinstance(f, _LibraryFailureWords) for f in library.filters):
        library.addFilter(_LibraryFailureWords())


def guarded_dcutr(host: Any) -> Any:
    """py-libp2p's DCUtR on ``host``, opened, aimed and bounded as ``p2p.network.punch`` says."""
    import trio
    from libp2p.relay.circuit_v2.dcutr import DCUtRProtocol

    class GuardedDCUtR(DCUtRProtocol):
        def __init__(self, view: PunchView) -> None:
            super().__init__(cast(Any, view))  # a host in all but its peer store
            self._view = view
            self._budget = PunchBudget()
            self._told = Told()
            self._opening: set[Any] = set()  # peers this end runs an exchange with now, as the opening end
            self.counts = PunchCounts()

        async def initiate_hole_punch(self, peer_id: Any) -> bool:
            # the library's loop calls this every 2 s for each relayed peer: what declines says nothing
            if await self._have_direct_connection(peer_id):
                return True
            me, peer = str(self._view.get_id()), str(peer_id)
            if not opens_punch(relayed_directions(self._view, peer_id), me, peer) or peer_id in self._opening:
                return False
            if not self._spend(peer):
                return False
            self._opening.add(peer_id)
            started = trio.current_time()
            try:
                landed: bool = await super().initiate_hole_punch(peer_id)
            finally:
                self._opening.discard(peer_id)
            self._ended(peer, landed, "opening", started)
            return landed

        async def _handle_dcutr_stream(self, stream: Any) -> None:
            peer_id = stream.muxed_conn.peer_id
            if peer_id in self._opening:  # two exchanges at once would dial one four-tuple twice
                log.debug("p2p.punch_refused", peer=str(peer_id), reason="this end's own punch runs")
                await stream.reset()
                return
            await super()._handle_dcutr_stream(stream)

        async def _perform_hole_punch(self, peer_id: Any, addrs: list[Any], as_responder: bool = False) -> bool:
            # ``as_responder`` is the library's name for the opening end's dials (their noise role):
            # the opening end's punch was counted before its exchange, the answering end's is here
            answering, peer = not as_responder, str(peer_id)
            if answering and not self._spend(peer):
                return False
            started = trio.current_time()
            known = (str(a) for a in self._view.get_peerstore().addrs(peer_id))
            targets = [multiaddr.Multiaddr(a) for a in punch_targets((str(a) for a in addrs), known)]
            self._view.punching[peer_id] = targets  # what the library adds from the peer store is these
            try:
                landed: bool = await super()._perform_hole_punch(peer_id, targets, as_responder)
            finally:
                self._view.punching.pop(peer_id, None)
            if answering:
                self._ended(peer, landed, "answering", started)
            return landed

        def _spend(self, peer: str) -> bool:
            if not self._budget.allow(peer, trio.current_time()):
                log.debug("p2p.punch_refused", peer=peer, reason="budget")
                return False
            self.counts.tried += 1
            return True

        def _ended(self, peer: str, landed: bool, role: str, started: float) -> None:
            took_s = round(trio.current_time() - started, 2)
            if landed:
                self.counts.landed += 1
                self._told.forget(peer)
                log.info("p2p.punch_landed", peer=peer, role=role, took_s=took_s)
                return
            self.counts.failed += 1
            tell = log.info if self._told.first(peer) else log.debug
            tell("p2p.punch_failed", peer=peer, role=role, took_s=took_s,
                 meaning="no direct connection: the connection stays relayed")  # fmt: skip

    _quiet_library_failures()
    dcutr = GuardedDCUtR(PunchView(host))
    host._dcutr_protocol = dcutr  # the host tells it of disconnections (the library set it on the view)
    return dcutr
