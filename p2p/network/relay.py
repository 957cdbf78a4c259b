"""Through NAT (issue 31): circuit relay v2 and reachability, on the host's trio thread.

- A reachable node may relay for others (``[p2p] relay_service``). What it lends is bounded by
  config, and py-libp2p's ``RelayLimits`` enforce it: reservations held, circuits open at once, and
  each circuit's duration and bytes.
- Every node answers AutoNAT dial-back requests. With ``reachability = "auto"`` it asks its bootstrap
  peers to dial it back; when they cannot, it is private and reserves a slot on each bootstrap peer
  that relays, renewed before it lapses.
- A peer this node cannot dial directly (it is behind a NAT too) is dialled through the relays it
  knows: the circuit's far end is the peer id asked for, and noise runs end to end through it.
- Over a relayed connection the end it came in to opens a hole punch (DCUtR) and both ends dial; where
  the NATs do not let it through, the connection stays on the relay. A punch dials public addresses
  only, at most 8, a few times per peer (``p2p.network.punch``, ``p2p.network.dcutr``).

The relay is someone we do not trust. It sees who talks to whom and how much, never what. It can
refuse or cut a circuit (the request fails, as a peer going offline does), and it can lie about
our reachability, which costs a needless reservation or a missing one, never a message.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, Literal

import multiaddr
import trio

from p2p.network.dcutr import guarded_dcutr
from p2p.network.settings import RelaySettings

_log = logging.getLogger("p2p.relay")
Reachability = Literal["unknown", "public", "private"]


MAX_NOTED_PEERS = 1_000
MAX_RELAYS_A_PEER = 4


#: How often reachability is asked again, and reservations renewed.
CHECK_S = 300.0


class RelayBook:
    """Through whom each peer may be reached: the peers that said they are connected to it (a peer
    exchange's answer), the latest first. Bounded: ``peers`` peers (``[p2p] peer_store_size``) of
    ``per_peer`` each, the least recently told of forgotten first. A relay that lies costs a failed circuit,
    never a message: noise proves the far end's peer id through it."""

    def __init__(self, peers: int = MAX_NOTED_PEERS, per_peer: int = MAX_RELAYS_A_PEER) -> None:
        self._limit, self._per_peer = peers, per_peer
        self._relays: dict[str, list[str]] = {}

    def note(self, relay: str, peers: Iterable[str]) -> None:
        for peer in peers:
            if peer == relay:
                continue
            known = self._relays.pop(peer, [])
            self._relays[peer] = [relay, *(r for r in known if r != relay)][: self._per_peer]
        while len(self._relays) > self._limit:
            del self._relays[next(iter(self._relays))]

    def relays_for(self, peer: str) -> list[str]:
        return list(self._relays.get(peer, []))

    def latest(self, count: int) -> dict[str, list[str]]:
        return {peer: list(relays) for peer, relays in list(self._relays.items())[-count:]}

    def __len__(self) -> int:
        return len(self._relays)


class Traversal:
    """The relay protocol (both ends), the circuit transport and AutoNAT for one libp2p host."""

    def __init__(self, host: Any, settings: RelaySettings, relay_candidates: Callable[[], list[Any]]) -> None:
        """``relay_candidates()``: the ``PeerInfo`` of peers that may relay for us (the bootstrap peers)."""
        from libp2p.host.autonat.autonat import AutoNATService
        from libp2p.relay.circuit_v2.config import RelayConfig, RelayRole
        from libp2p.relay.circuit_v2.protocol import PROTOCOL_ID, STOP_PROTOCOL_ID, CircuitV2Protocol
        from libp2p.relay.circuit_v2.resources import RelayLimits
        from libp2p.relay.circuit_v2.transport import CircuitV2Transport

        self.settings = settings
        self._host = host
        self._candidates = relay_candidates
        limits = RelayLimits(
            duration=settings.relay_circuit_s,
            data=settings.relay_circuit_bytes,
            max_circuit_conns=settings.relay_max_circuits,
            max_reservations=settings.relay_max_reservations,
        )
        roles = RelayRole.STOP | RelayRole.CLIENT | (RelayRole.HOP if settings.relay_service else RelayRole(0))
        self._protocol = CircuitV2Protocol(host, limits=limits, allow_hop=settings.relay_service)
        self._transport = CircuitV2Transport(host, self._protocol, RelayConfig(roles=roles, limits=limits))
        self._autonat = AutoNATService(host, serve=True)
        # over a relayed connection, one end opens a punch and both dial, public addresses only
        self._dcutr = guarded_dcutr(host)
        # The library's HOP handler grants a reservation whatever ``allow_hop`` says: registered only
        # on a node that relays, a stranger's HOP stream to any other is refused at negotiation.
        if settings.relay_service:
            host.set_stream_handler(PROTOCOL_ID, self._protocol._handle_hop_stream)
        host.set_stream_handler(STOP_PROTOCOL_ID, self._protocol._handle_stop_stream)
        self._hop = PROTOCOL_ID
        self.reachability: Reachability = "unknown" if settings.reachability == "auto" else settings.reachability
        self.reserved: dict[str, int] = {}  # relay peer id -> reservation expiry (unix s)
        self.refused_by: set[str] = set()  # relays that would not give us a slot when last asked
        # a peer behind a NAT holds its slot on a relay of its own, which may be none of ours
        self.relay_book = RelayBook(settings.peer_store_size)

    @contextlib.asynccontextmanager
    async def running(self, nursery: trio.Nursery) -> AsyncIterator[None]:
        """The relay protocol's service for the ``async with``; reachability and reservations are
        kept by a task in ``nursery``."""
        from libp2p.tools.anyio_service import background_trio_service

        async with background_trio_service(self._protocol), background_trio_service(self._dcutr):
            nursery.start_soon(self._keep_reachable, nursery)
            yield

    def details(self) -> dict[str, Any]:
        return {
            "reachability": self.reachability,
            "relay_service": self.settings.relay_service,
            "reserved_on": sorted(self.reserved),
            "refused_by": sorted(self.refused_by),
            # hole punches (DCUtR) this node took part in, opening or answering, and how they ended
            "hole_punches_tried": self._dcutr.counts.tried,
            "hole_punches_landed": self._dcutr.counts.landed,  # a direct connection after it
            "hole_punches_failed": self._dcutr.counts.failed,  # over, and the connection stays relayed
            "hole_punches_open": len(self._dcutr._in_progress),  # begun and not yet over
            # through whom a peer may be reached when it cannot be dialled (the latest 32 told of)
            "relays_for": self.relay_book.latest(32),
        }

    def is_relayed(self, peer: Any) -> bool:
        """Whether every connection to ``peer`` goes through a relay."""
        connections = self._host.get_network().get_connections(peer)
        return bool(connections) and all(_through_relay(c) for c in connections)

    def note_relays(self, relay: str, peers: Iterable[str]) -> None:
        self.relay_book.note(relay, peers)

    def _noted_relays(self, peer: Any) -> list[Any]:
        from libp2p.peer.id import ID
        from libp2p.peer.peerinfo import PeerInfo

        infos = []
        for relay in self.relay_book.relays_for(str(peer)):
            with contextlib.suppress(Exception):  # PeerStoreError: no address of it known any more
                relay_id = ID.from_base58(relay)
                infos.append(PeerInfo(relay_id, self._host.get_peerstore().addrs(relay_id)))
        return infos

    async def dial_through_relays(self, peer: Any) -> bool:
        """Open a circuit to ``peer`` through a relay we reserved on, then one that told us it is
        connected to ``peer`` (its own relay, maybe), then any other candidate; True when one
        connected."""
        ours = self._candidates()
        reserved = [info for info in ours if str(info.peer_id) in self.reserved]
        relays, tried = [*reserved, *self._noted_relays(peer), *ours], set()  # each relay once, in that order
        for relay in relays:
            if relay.peer_id == peer or not relay.addrs or relay.peer_id in tried:
                continue
            tried.add(relay.peer_id)
            circuit = multiaddr.Multiaddr(f"{relay.addrs[0]}/p2p/{relay.peer_id}/p2p-circuit/p2p/{peer}")
            try:
                with trio.fail_after(15):
                    await self._transport.dial(circuit)
                return True
            except Exception as exc:  # noqa: BLE001 - that relay would not or could not: try the next
                _log.info("p2p.relay_dial_failed", extra={"fields": {"relay": str(relay.peer_id), "error": str(exc)}})
        return False

    async def _keep_reachable(self, nursery: trio.Nursery) -> None:
        while True:
            connected = set(self._host.get_connected_peers())
            candidates = [info for info in self._candidates() if info.peer_id in connected]
            if not candidates:  # no bootstrap peer yet (they are dialled beside this): look again soon
                await trio.sleep(1.0)
                continue
            if self.settings.reachability == "auto":
                await self._ask_reachability([info.peer_id for info in candidates])
            if self.reachability == "private":
                for info in candidates:
                    await self._reserve(info.peer_id, nursery)
            undecided = self.reachability == "unknown"  # asked again soon: more bootstrap peers may answer
            await trio.sleep(min(CHECK_S, 30.0) if undecided else CHECK_S)

    async def _ask_reachability(self, servers: list[Any]) -> None:
        from libp2p.host.autonat.autonat import AutoNATStatus

        self._autonat.dial_results.clear()  # each round is a fresh opinion: a NAT may appear or go
        self._autonat.confirmations = min(3, len(servers))
        with trio.move_on_after(30):
            status = await self._autonat.check_reachability(servers)
            verdicts: dict[int, Reachability] = {AutoNATStatus.PUBLIC: "public", AutoNATStatus.PRIVATE: "private"}
            before, self.reachability = self.reachability, verdicts.get(status, "unknown")
            if self.reachability != before:
                _log.info("p2p.reachability", extra={"fields": {"reachability": self.reachability}})

    async def _reserve(self, relay: Any, nursery: trio.Nursery) -> None:
        reserved = False
        try:
            with trio.fail_after(15):
                stream = await self._host.new_stream(relay, [self._hop])
                try:
                    reserved = await self._transport.reserve(stream, relay, nursery)
                finally:
                    with contextlib.suppress(Exception):
                        await stream.close()
        except Exception as exc:  # noqa: BLE001 - it does not relay (no such protocol), or did not answer
            _log.info("p2p.relay_unavailable", extra={"fields": {"relay": str(relay), "error": str(exc)}})
        if reserved:
            self.reserved[str(relay)] = int(self._transport._reservations.get(relay, 0))
            self.refused_by.discard(str(relay))
            return
        self.reserved.pop(str(relay), None)  # full, or not relaying for us: asked again at the next round
        self.refused_by.add(str(relay))


def _through_relay(connection: Any) -> bool:
    try:
        addrs = connection.get_transport_addresses()
    except Exception:  # noqa: BLE001 - a connection closing while we look
        return False
    return any("/p2p-circuit" in str(a) for a in addrs)
