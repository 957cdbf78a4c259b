"""The libp2p host on its own trio thread, bridged to the daemon's asyncio loop.

py-libp2p is trio-native, so the host runs on a ``ground.bridge.TrioThread``: commands
go in through ``call`` and report back on an asyncio future; accepted messages come
out through ``to_loop`` into one bounded asyncio queue (a full queue drops and
counts, never blocks the libp2p thread).

The defaults of py-libp2p that silently lose messages are overridden (see
DESIGN.md section 3): explicit mesh degrees, a 1 s heartbeat, no adaptive gossip,
no built-in spam limit (ours is per authenticated author, in the validator), no
IP-diversity rule (it refuses a mesh of peers on one machine), noise as the only
security transport. Every gossip message passes ``MessageValidator`` before it is
delivered or forwarded; rejections cost the forwarding peer points in the
``PenaltyBox`` and a peer past the threshold is disconnected and banned.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import multiaddr
import trio

from crypto.identity import Identity
from ground import failpoints
from ground.bridge import TrioThread
from ground.clock import wall_clock_ms
from ground.errors import WiringError
from p2p.deliveries import Delivery, DeliveryLanes
from p2p.errors import HostNotRunning, InvalidValue, PeerUnreachable, ProtocolRefused, RequestFailed, RequestTimedOut
from p2p.framing import MAX_FRAME_BYTES, read_frame, write_frame
from p2p.network.reach import reach
from p2p.network.relay import Traversal
from p2p.network.settings import HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator
from p2p.verdicts import Verdict

T = TypeVar("T")
#: Answers a direct request: (peer id of the requester, request bytes) -> answer bytes.
RequestHandler = Callable[[str, bytes], Coroutine[Any, Any, bytes]]
_log = logging.getLogger("p2p.host")


#: The gossip heartbeat (mesh upkeep), in seconds.
HEARTBEAT_S = 1


@dataclass(frozen=True, slots=True)
class PeerSnapshot:
    peer_id: str
    addrs: tuple[str, ...]
    penalty_points: float
    banned_until_ms: int | None = None
    relayed: bool = False  # every connection to it goes through a relay
    seen_at: tuple[str, ...] = ()  # the far ends of its direct connections: where a handshake proved it


@dataclass
class HostCounters:
    delivered: int = 0
    dropped_full_queue: int = 0
    bans: int = 0
    published: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class P2PHost:
    def __init__(
        self,
        identity: Identity,
        validator: MessageValidator,
        penalties: PenaltyBox,
        settings: HostSettings,
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
        redial_s: float = 10.0,
    ) -> None:
        self._identity = identity
        self._redial_s = redial_s
        self.validator = validator
        self.penalties = penalties
        self.settings = settings
        self._now_ms = now_ms
        self.peer_id = identity.peer_id
        self.counters = HostCounters()
        self.deliveries = DeliveryLanes(settings.delivery_queue)
        # A libp2p run that fails after it served is run again (with a fresh host, the same settings and
        # services): without it a node kept running with no network until it was restarted by hand.
        self._bridge = TrioThread("libp2p", restart=True)
        self._nursery: trio.Nursery | None = None  # the trio side's, for tasks the validator starts
        self._host: Any = None
        self._pubsub: Any = None
        self.listen_addrs: list[str] = []
        #: Called on the asyncio loop with (forwarding peer id, reason) for every rejected message.
        self.on_reject: Callable[[str, str], None] | None = None
        self._services: dict[str, RequestHandler] = {}
        self._topics: tuple[str, ...] = ()
        self._traversal: Traversal | None = None
        self._resources: Any = None  # p2p.network.resources.BoundedResources once started

    # --- asyncio side --------------------------------------------------------------------

    async def start(self) -> None:
        """Start the thread and wait until the host listens and has subscribed to the topics of the
        kinds registered with its validator."""
        self._topics = self.validator.topics()
        self.listen_addrs = await self._bridge.start(self._trio_main, timeout_s=30)

    @property
    def restarts(self) -> dict[str, Any]:
        """How often the libp2p run failed after it served and was run again, and its last error."""
        return {"count": self._bridge.restarts, "last_error": self._bridge.last_failure}

    async def stop(self) -> None:
        """Close the host (connections, listeners, the seen-cache sweeper) and join the thread."""
        await self._bridge.stop(timeout_s=15)

    async def publish(self, topic: str, data: bytes) -> None:
        """Gossip ``data`` on ``topic``, one of the topics of the kinds registered with the validator."""
        if topic not in self._topics:
            raise WiringError(f"no registered gossip kind travels on {topic!r}: register its kind before start")
        await self._call(lambda: self._pubsub.publish(topic, data))
        self.counters.published += 1

    async def connect(self, address: str) -> str:
        """Dial a peer by its full multiaddr (with /p2p/<id>); returns its peer id."""
        from libp2p.peer.peerinfo import info_from_p2p_addr

        try:
            info = info_from_p2p_addr(multiaddr.Multiaddr(address))
        except (ValueError, multiaddr.exceptions.Error) as exc:  # the libraries' refusals of an address
            raise InvalidValue(
                f"{address!r} is not a peer's full multiaddr (like /ip4/127.0.0.1/tcp/4001/p2p/12D3KooW...): {exc}"
            ) from None

        async def dial() -> str:
            # An explicit dial is news (a restarted peer on a new port): forget earlier failures.
            self._host.get_network().unblock_peer(info.peer_id)
            self._host.get_peerstore().add_addrs(info.peer_id, info.addrs, 3600)  # kept even if already connected
            try:
                await self._host.connect(info)
            except Exception as exc:  # py-libp2p's SwarmException and the OSErrors under it
                raise PeerUnreachable(f"cannot dial {address}: {exc}") from exc
            return str(info.peer_id.to_base58())

        return await self._call(dial)

    async def remember_addrs(self, peer_id: str, addrs: list[str]) -> None:
        """Learn where ``peer_id`` listens (from a signed listing), so a direct request can dial it."""
        from libp2p.peer.id import ID

        peer = ID.from_base58(peer_id)
        parsed = [multiaddr.Multiaddr(a.split("/p2p/")[0]) for a in addrs]

        async def learn() -> None:
            self._host.get_peerstore().add_addrs(peer, parsed, 3600)

        await self._call(learn)

    async def note_relays(self, relay_id: str, peer_ids: list[str]) -> None:
        """``relay_id`` said it is connected to ``peer_ids``: a request to one of them that cannot dial
        it directly may go through ``relay_id`` (``Traversal.note_relays``)."""

        async def note() -> None:
            if self._traversal is not None:
                self._traversal.note_relays(relay_id, peer_ids)

        await self._call(note)

    def dialable_addrs(self) -> list[str]:
        """This host's addresses as others can dial them (at most 8): what it tells its peers, where an
        unspecified listen address (0.0.0.0) is already each of the machine's own (``p2p.network.addresses``)."""
        return self.listen_addrs[:8]

    async def peers(self) -> list[PeerSnapshot]:
        async def snapshot() -> list[PeerSnapshot]:
            now = self._now_ms()
            out = []
            banned = self.penalties.banned(now)
            for peer in self._host.get_connected_peers():
                pid = peer.to_base58()
                if pid in banned:
                    continue
                try:
                    addrs = tuple(str(a) for a in self._host.get_peerstore().addrs(peer))
                except Exception:  # noqa: BLE001 - PeerStoreError: it disconnected while we looked
                    addrs = ()
                relayed = self._traversal is not None and self._traversal.is_relayed(peer)
                points = round(self.penalties.points(pid, now), 1)
                out.append(PeerSnapshot(pid, addrs, points, relayed=relayed, seen_at=self._seen_at(peer)))
            for pid, until in self.penalties.banned(now).items():
                out.append(PeerSnapshot(pid, (), 0.0, until))
            return out

        return await self._call(snapshot)

    def _seen_at(self, peer: Any) -> tuple[str, ...]:
        seen: list[str] = []
        for connection in self._host.get_network().get_connections(peer):
            with contextlib.suppress(Exception):  # a connection closing while we look
                seen.extend(str(a) for a in connection.get_transport_addresses() if "/p2p-circuit" not in str(a))
        return tuple(seen)

    def limits(self) -> dict[str, Any]:
        """What remote peers hold of this node now and what it refused them (``p2p.limits``); empty before start."""
        return self._resources.report() if self._resources is not None else {}

    def traversal(self) -> dict[str, Any]:
        """Whether this node is reachable, whether it relays, and on which relays it holds a slot."""
        return self._traversal.details() if self._traversal is not None else {}

    def serve(self, protocol: str, handler: RequestHandler) -> None:
        """Answer requests on a direct stream protocol (call before ``start``): ``handler(peer id,
        request bytes)`` runs on the asyncio loop and returns the answer's bytes."""
        if self._bridge.started:
            raise WiringError("register stream protocols before the host starts")
        self._services[protocol] = handler

    async def request(
        self, peer_id: str, protocol: str, payload: bytes, *, timeout_s: float = 15.0, max_bytes: int = MAX_FRAME_BYTES
    ) -> bytes:
        """One request and one answer (at most ``max_bytes``) over a new direct stream to ``peer_id``."""
        from libp2p.custom_types import TProtocol
        from libp2p.peer.id import ID

        from p2p.network.protocol_support import refused_protocol, speaks

        async def open_stream(peer: Any) -> Any:
            if not self._host.get_network().get_connections(peer):
                await reach(self._host, self._traversal, peer)  # directly, or through a relay beside
            elif not speaks(self._host, peer, protocol):
                raise ProtocolRefused(f"{peer_id} does not speak {protocol} (by its identify)")
            try:
                return await self._host.new_stream(peer, [TProtocol(protocol)])
            except Exception as exc:  # a connection left from before the peer restarted: redial once
                if refused_protocol(exc):  # it answered: the connection is fine, and stays
                    raise ProtocolRefused(f"{peer_id} does not speak {protocol}") from exc
                with contextlib.suppress(Exception):
                    await self._host.disconnect(peer)
                self._host.get_network().unblock_peer(peer)  # its old address failing must not block the new one
                await reach(self._host, self._traversal, peer)
                return await self._host.new_stream(peer, [TProtocol(protocol)])

        async def exchange() -> bytes:
            with trio.fail_after(timeout_s):
                stream = await open_stream(ID.from_base58(peer_id))
                try:
                    await write_frame(stream, payload)
                    return await read_frame(stream, max_bytes)
                finally:
                    await stream.close()

        try:
            return await self._call(exchange)
        except trio.TooSlowError:
            raise RequestTimedOut(f"{peer_id} did not answer {protocol} within {timeout_s} s") from None
        except (RuntimeError, TimeoutError, ProtocolRefused):
            raise
        except Exception as exc:
            raise RequestFailed(f"{protocol} to {peer_id} failed: {exc}") from exc

    async def mesh_size(self, topic: str) -> int:
        async def size() -> int:
            return len(self._pubsub.router.mesh.get(topic, ()))

        return await self._call(size)

    async def _call(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` on the trio thread and await its result here."""
        if not self._bridge.started:
            raise HostNotRunning()
        return await self._bridge.call(work)

    # --- trio side -----------------------------------------------------------------------

    async def _trio_main(self) -> None:
        from libp2p import new_host
        from libp2p.crypto.ed25519 import create_new_key_pair
        from libp2p.crypto.x25519 import create_new_key_pair as x25519_key_pair
        from libp2p.custom_types import TProtocol
        from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
        from libp2p.security.noise.transport import PROTOCOL_ID as NOISE_ID
        from libp2p.security.noise.transport import Transport as NoiseTransport
        from libp2p.tools.anyio_service import background_trio_service

        from p2p.gossip_records import install as verify_each_peer_record_once
        from p2p.network.addresses import advertised
        from p2p.network.resources import BoundedResources, connection_config
        from p2p.pubsub_teardown import TolerantPubsub
        from p2p.yamux_credit import install as credit_at_half_window

        verify_each_peer_record_once()
        credit_at_half_window()

        s = self.settings
        key_pair = create_new_key_pair(self._identity.seed)
        listen = [multiaddr.Multiaddr(a) for a in s.listen]
        resources = BoundedResources(s, on_flood=self._ban_flooder)
        host = new_host(
            key_pair=key_pair,
            # Noise only: the library's default list also offers plaintext and secio.
            sec_opt={NOISE_ID: NoiseTransport(key_pair, noise_privkey=x25519_key_pair().private_key)},
            listen_addrs=listen,
            addrs_factory=advertised,  # 0.0.0.0 told as this machine's addresses, never as itself
            enable_mDNS=s.mdns,
            connection_config=connection_config(s),
            resource_manager=resources,
        )
        # Without the library's stream semaphore a stream past the bounds is reset, instead of
        # waiting as a task for a slot (p2p.network.resources).
        swarm: Any = host.get_network()  # the Swarm, whose setter the interface does not declare
        swarm.set_resource_manager(resources, enable_stream_semaphore=False)
        self._resources = resources
        router = GossipSub(
            protocols=[PROTOCOL_ID_V11],
            degree=s.degree,
            degree_low=s.degree_low,
            degree_high=s.degree_high,
            heartbeat_interval=HEARTBEAT_S,
            adaptive_gossip_enabled=False,
            spam_protection_enabled=False,
            eclipse_protection_enabled=False,
        )
        # Seen-message memory outlives the envelope window, so a message is never validated twice.
        window_s = (self.validator.wire.max_age_ms + self.validator.wire.max_ahead_ms) // 1000
        pubsub = TolerantPubsub(host, router, seen_ttl=window_s + 60, validation_cache_ttl=window_s)
        self._host, self._pubsub = host, pubsub
        self._traversal = Traversal(host, s, self._bootstrap_infos)
        try:
            async with host.run(listen_addrs=listen), trio.open_nursery() as nursery:
                self._nursery = nursery
                async with (
                    background_trio_service(pubsub),
                    background_trio_service(router),
                    self._traversal.running(nursery),
                ):
                    await pubsub.wait_until_ready()
                    for topic in self._topics:
                        pubsub.set_topic_validator(topic, self._validator_for(topic), False)
                        subscription = await pubsub.subscribe(topic)
                        nursery.start_soon(_drain, subscription)
                    for protocol, handler in self._services.items():
                        host.set_stream_handler(TProtocol(protocol), self._stream_handler(handler))
                    nursery.start_soon(self._keep_bootstrap_connected)
                    nursery.start_soon(self._enforce_bans)
                    addrs = [str(a) for a in host.get_addrs()]
                    self.listen_addrs = addrs  # a run after a failure may listen on a new port (port 0)
                    self._bridge.ready(addrs, nursery)
                    failpoints.check("p2p:host-serving")  # the whole libp2p run fails, after it served
                    await self._bridge.stopping()
                    nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            pubsub.seen_messages.stop()  # its sweeper is a thread of its own
            await host.close()

    def _validator_for(self, topic: str) -> Callable[[Any, Any], bool]:
        from libp2p.peer.id import ID

        me = self.peer_id

        def validate(forwarder: Any, msg: Any) -> bool:
            now = self._now_ms()
            origin = ID(msg.from_id).to_base58()
            outcome = self.validator.validate(topic, bytes(msg.data), origin, now)
            sender = forwarder.to_base58()
            points = outcome.penalty_for(sender, origin)
            if sender != me and points and self.penalties.penalize(sender, points, now):
                self.counters.bans += 1
                _log.warning("p2p.peer_banned", extra={"fields": {"peer": sender, "last_reason": outcome.reason.value}})
                self._pubsub.add_to_blacklist(forwarder)  # its gossip is dropped from now on
                if self._nursery is not None:
                    self._nursery.start_soon(self._disconnect, forwarder)
            accepted = outcome.verdict is Verdict.ACCEPT
            if outcome.verdict is Verdict.REJECT and sender != me and self.on_reject is not None:
                self._bridge.to_loop(self.on_reject, sender, outcome.reason.value)
            if accepted and origin != me:
                self._deliver(Delivery(topic, outcome, sender, now))
            return accepted

        return validate

    def _stream_handler(self, handler: RequestHandler) -> Callable[[Any], Awaitable[None]]:
        """Read one framed request, have the asyncio side answer it, write the answer back."""

        async def handle(stream: Any) -> None:
            try:
                with trio.fail_after(30):
                    request = await read_frame(stream)
                    peer = stream.muxed_conn.peer_id.to_base58()
                    await write_frame(stream, await self._bridge.on_loop(handler(peer, request)))
            except Exception as exc:  # noqa: BLE001 - one bad stream must not touch the host
                _log.info("p2p.stream_failed", extra={"fields": {"error": repr(exc)}})
                with contextlib.suppress(Exception):
                    await stream.reset()
                return
            await stream.close()

        return handle

    def _deliver(self, delivery: Delivery) -> None:
        def put() -> None:
            if self.deliveries.put_nowait(delivery):
                self.counters.delivered += 1
            else:
                self.counters.dropped_full_queue += 1

        self._bridge.to_loop(put)

    def _bootstrap_infos(self) -> list[Any]:
        from libp2p.peer.peerinfo import info_from_p2p_addr

        return [info_from_p2p_addr(multiaddr.Multiaddr(a)) for a in self.settings.bootstrap]

    async def _keep_bootstrap_connected(self) -> None:
        infos = self._bootstrap_infos()
        while True:
            connected = set(self._host.get_connected_peers())
            for info in infos:
                if info.peer_id not in connected and not self._pubsub.is_peer_blacklisted(info.peer_id):
                    # The library refuses for 60 s to dial a peer whose every address failed; a
                    # bootstrap peer that starts after this node would stay out of reach that long.
                    # This loop paces its own redials (``redial_s``, given at construction), so each one really dials.
                    self._host.get_network().unblock_peer(info.peer_id)
                    try:
                        with trio.move_on_after(10):
                            await self._host.connect(info)
                    except Exception as exc:  # noqa: BLE001 - a bootstrap peer being down is normal
                        _log.info(
                            "p2p.bootstrap_unreachable",
                            extra={"fields": {"peer": str(info.peer_id), "error": str(exc)}},
                        )
            await trio.sleep(self._redial_s)

    def _ban_flooder(self, peer: str) -> None:
        """A peer that opened far more streams than its share (``p2p.network.resources``): banned as a
        peer past its penalty threshold is, and its connection closed now, which frees what it sent."""
        from libp2p.peer.id import ID

        if not self.penalties.penalize(peer, self.penalties.settings.penalty_threshold, self._now_ms()):
            return  # banned already: its connection is being closed
        self.counters.bans += 1
        _log.warning("p2p.peer_banned", extra={"fields": {"peer": peer, "last_reason": "stream_flood"}})
        if self._nursery is not None:
            self._nursery.start_soon(self._disconnect, ID.from_base58(peer))

    async def _disconnect(self, peer: Any) -> None:
        try:
            await self._host.disconnect(peer)
        except Exception as exc:  # noqa: BLE001 - already gone is fine
            _log.debug("p2p.disconnect_failed", extra={"fields": {"peer": str(peer), "error": str(exc)}})

    async def _enforce_bans(self) -> None:
        """Keep banned peers off (they, or the library's auto-dialer, may reconnect) and lift
        bans that are over. The pubsub blacklist drops their gossip even while a reconnect lasts."""
        from libp2p.peer.id import ID

        while True:
            await trio.sleep(0.5)
            now = self._now_ms()
            for peer in self.penalties.expired_bans(now):
                self._pubsub.remove_from_blacklist(ID.from_base58(peer))
            banned = self.penalties.banned(now)
            for peer in self._host.get_connected_peers():
                if peer.to_base58() in banned:
                    await self._disconnect(peer)


async def _drain(subscription: Any) -> None:
    """Delivery happens in the validator; empty the library's subscription queue so it never fills."""
    async for _ in subscription:
        pass
