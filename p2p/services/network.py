"""The network commands' service (``node.commands.network``: ``peers``, ``connect``, ``weather``)
and the network's report in ``status``, over the pieces a running node holds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from crypto.envelope import Envelope
from crypto.identity import Identity
from ground.clock import wall_clock_ms
from ground.events import get_logger
from p2p.deliveries import Delivery
from p2p.errors import HostNotRunning
from p2p.host import P2PHost
from p2p.kinds import GossipKind, GossipKinds, Received
from p2p.network.discovery import PeerDiscovery
from p2p.trust.keeper import TrustKeeper
from p2p.trust.peer_listing import peer_rows
from p2p.validation import MessageValidator
from p2p.weather import NetworkWeather
from p2p.weather.ask import WeatherAnswers
from p2p.weather.station import WeatherStation

log = get_logger("node.p2p")

#: How often the summary of the peers that ``status`` shows is refreshed, in seconds.
SUMMARY_S = 2.0


class NetworkService:
    """Peers with their trust, dialing one, the weather now and broadcasting one, and ``status``'s
    report. What runs only once the host is up (``host``, ``discovery``, ``answers``) is set by the
    part that starts it; before, a command that needs the host answers ``HostNotRunning``."""

    def __init__(
        self,
        identity: Identity,  # signs what this node publishes
        validator: MessageValidator,
        gossip: GossipKinds,
        keeper: TrustKeeper,
        weather: NetworkWeather,
        station: WeatherStation,
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._identity = identity
        self._validator = validator
        self._gossip = gossip
        self._keeper = keeper
        self._weather = weather
        self.station = station
        self._now_ms = now_ms
        self.host: P2PHost | None = None
        self.discovery: PeerDiscovery | None = None
        self.answers: WeatherAnswers | None = None
        #: Connected peers by level and banned ones, as of the last look (``watch_peers``).
        self.summary: dict[str, Any] = {"connected": 0, "by_level": {}, "banned": 0}

    def _running(self) -> P2PHost:
        if self.host is None:
            raise HostNotRunning()
        return self.host

    # --- the commands ------------------------------------------------------------------------

    async def peer_listing(self, limit: int) -> list[dict[str, Any]]:
        """Peers with trust levels, as of the last trust round (``p2p.trust.peer_listing``): a
        request must not cost an EigenTrust run."""
        snapshots = await self._running().peers()
        return peer_rows(snapshots, self._keeper.book, self._validator.level_of, limit=limit)

    async def dial(self, address: str) -> dict[str, Any]:
        return {"peer_id": await self._running().connect(address)}

    async def weather_report(self) -> dict[str, Any]:
        return self._weather.report(self._now_ms())

    async def broadcast_weather(self, level: float, duration_s: int, reason: str) -> dict[str, Any]:
        return await self.station.broadcast_weather(level, duration_s, reason)

    async def publish(self, kind: GossipKind[Any], message: Any, *, now_ms: int | None = None) -> Envelope:
        """Sign ``message`` as this node and gossip it on its kind's topic; returns the envelope sent."""
        host = self._running()
        envelope = kind.seal(self._identity, message, now_ms or self._now_ms())
        await host.publish(kind.topic, envelope.encode())
        return envelope

    # --- what arrives ------------------------------------------------------------------------

    async def consume(self) -> None:
        """Hand every accepted message to its kind's consumer; a consumer that fails is logged, and
        the next message is handled."""
        host = self._running()
        while True:
            delivery = await host.deliveries.get()
            try:
                await self._handle(delivery)
            except Exception:
                log.error("p2p.delivery_failed", exc_info=True, topic=delivery.topic)

    async def _handle(self, delivery: Delivery) -> None:
        envelope = delivery.outcome.envelope
        assert envelope is not None
        self._keeper.delivered(envelope.author)
        if not await self._gossip.dispatch(Received(delivery.outcome.message, envelope, delivery.topic)):
            log.info("p2p.gossip_unconsumed", kind=envelope.kind, author=envelope.author.hex()[:16])

    # --- status ------------------------------------------------------------------------------

    async def watch_peers(self) -> None:
        """Keep a cheap summary of the peers for ``status`` (``report`` must not wait on the network).
        Levels come from the trust keeper's last round: EigenTrust is not rerun every 2 s."""
        while True:
            try:
                snaps = await self._running().peers()
            except Exception as exc:  # noqa: BLE001 - a summary for status must never stop the node
                log.warning("p2p.peer_summary_failed", error=repr(exc))
                await asyncio.sleep(SUMMARY_S)
                continue
            by_level: dict[str, int] = {}
            for snap in snaps:
                if snap.banned_until_ms is None:
                    level = self._keeper.level_of_peer(snap.peer_id).value
                    by_level[level] = by_level.get(level, 0) + 1
            self.summary = {
                "connected": sum(by_level.values()),
                "by_level": by_level,
                "banned": sum(1 for snap in snaps if snap.banned_until_ms is not None),
            }
            await asyncio.sleep(SUMMARY_S)

    def report(self, ingested: dict[str, int], evicted: dict[str, int]) -> dict[str, Any]:
        """The network's part of ``status`` (cheap and synchronous). ``ingested`` and ``evicted`` are
        the market's gossip counts; the trust keeper's and the weather station's join ``ingested``."""
        host = self.host
        counters = self._validator.snapshot_counters()
        answers = self.answers.counts() if self.answers is not None else {}
        out: dict[str, Any] = {
            "peer_id": self._identity.peer_id,
            "listen": host.listen_addrs if host else [],
            "messages": counters,
            "ingested": ingested | self._keeper.counts | self.station.counts,
            "evicted_by_quota": dict(evicted),
            "unconsumed": dict(self._gossip.unconsumed),
            "halted_until_ms": self._validator.halted_until_ms,
            "weather_confirm": vars(self.station.confirmer.counts) | answers,
            "peers": dict(self.summary),
        }
        if host is not None:
            out["bans"] = host.counters.bans
            out["libp2p_restarts"] = host.restarts
            out["dropped_full_queue"] = host.counters.dropped_full_queue
            out["dropped_by_lane"] = {lane.value: n for lane, n in host.deliveries.dropped.items()}
            out["waiting_by_lane"] = host.deliveries.sizes()
            out["nat"] = host.traversal()
            out["limits"] = host.limits()
        if self.discovery is not None:
            d = self.discovery
            out["discovery"] = {"target": d.settings.target_peers, "known": len(d.store), "learned": d.learned,
                                "dialled": d.dialled}  # fmt: skip
        out["trust"] = self._keeper.report()
        out["summary"] = self._summary_line(counters)
        return out

    def _summary_line(self, counters: dict[str, dict[str, int]]) -> str:
        accepted = sum(t.get("accepted", 0) for t in counters.values())
        rejected = sum(n for t in counters.values() for r, n in t.items() if r != "accepted")
        halted = self._validator.halted_until_ms > self._now_ms()
        levels = ", ".join(f"{n} {level}" for level, n in sorted(self.summary["by_level"].items()))
        return (
            f"{self.summary['connected']} peers ({levels or 'none'}), "
            f"messages {accepted} accepted / {rejected} refused"
            + (", WEATHER: untrusted ingestion halted" if halted else ", weather clear")
        )
