"""The P2P network as a part of the daemon: it builds the network's pieces from the ``[p2p]``,
``[trust]`` and ``[wire]`` tables, starts them in order, runs their loops and stops them.

The pieces do the work: the libp2p host with the validator and the penalty box (``p2p.host``), the
trust keeper and its rounds (``p2p.trust.keeper``), the weather station (``p2p.weather.station``),
discovery, and the network service the ``peers``, ``connect`` and ``weather`` commands and
``status`` call (``p2p.services.network``). The part is also the host of the ``skills`` commands
(``node.commands.skills_requests.SkillsHost``).
"""

from __future__ import annotations

from typing import Any

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope
from ground.events import get_logger
from marketplace.catalog.bounties import purge_expired_bounties
from marketplace.desk.reputation import fold_in_evidence, reputation_in
from memory.dynamics.endocrine import Endocrine
from memory.intake.store import IntakeStore
from node.logs import route_library_logs
from node.parts.memory import MemoryPart
from node.runtime.context import NodeContext
from node.runtime.lifecycle import TaskSupervisor
from node.runtime.ports import refuse_busy_listen
from p2p.host import P2PHost, RequestHandler
from p2p.kinds import GossipKind, GossipKinds
from p2p.network.discovery import PROTOCOL as DISCOVERY_PROTOCOL
from p2p.network.discovery import PeerDiscovery, PeerStore
from p2p.penalties import PenaltyBox
from p2p.services.network import NetworkService
from p2p.trust.attestation import ATTESTATION_KIND
from p2p.trust.book import TrustBook, TrustLevel
from p2p.trust.keeper import TrustKeeper
from p2p.validation import MessageValidator
from p2p.weather import CortisolFloor, NetworkWeather
from p2p.weather.ask import PROTOCOL as WEATHER_PROTOCOL
from p2p.weather.ask import WeatherAnswers, asker
from p2p.weather.station import WeatherStation

log = get_logger("node.p2p")


class P2PPart:
    name = "p2p"

    def __init__(self, ctx: NodeContext, supervisor: TaskSupervisor, memory: MemoryPart) -> None:
        self._ctx = ctx
        self._supervisor = supervisor
        self._memory = memory
        cfg = ctx.config
        self._anchors = TrustAnchors.from_hex(cfg.trust.management_keys)
        me = ctx.identity.public_key
        #: The gossip kinds this node speaks, each registered with its consumer by the part that owns it.
        self.gossip = GossipKinds()
        self.validator = MessageValidator(self._anchors, cfg.wire, cfg.p2p, kinds=self.gossip, own_key=me)
        self.keeper = TrustKeeper(
            me, frozenset(self._anchors), cfg.trust, self.validator, self.store,
            fold_evidence=fold_in_evidence, now_ms=ctx.now_ms,
        )  # fmt: skip
        self.trust: TrustBook = self.keeper.book  # the keeper's, once opened (``SkillsHost``)
        self.weather = NetworkWeather(self.validator, self._cortisol_floor, self.keeper.save)
        self.station = WeatherStation(self.weather, me, ctx.now_ms, self.publish, manager=cfg.node.role == "management")
        #: The network commands' service (``node.commands.network``) and ``status``'s report.
        self.network = NetworkService(
            ctx.identity, self.validator, self.gossip, self.keeper, self.weather, self.station, now_ms=ctx.now_ms
        )
        self.network.answers = WeatherAnswers(self.weather.sequences, cfg.p2p, now_ms=ctx.now_ms)
        self.host: P2PHost | None = None
        self.discovery: PeerDiscovery | None = None
        #: The market's gossip counts (``node.parts.market.market_sink`` fills them): what peers' listings,
        #: revocations, bounties and endorsements added, and what the quotas deleted since start.
        self.ingested = {"skills": 0, "revocations": 0, "bounties": 0, "endorsements": 0}
        self.evicted = {"crystals": 0, "bytes": 0, "listings": 0, "bounties": 0}
        self._services: dict[str, RequestHandler] = {}
        self.gossip.register(self.station.kind, self.station.received)
        self.gossip.register(ATTESTATION_KIND, self.keeper.heard)

    def add_service(self, protocol: str, handler: RequestHandler) -> None:
        """A direct-stream protocol answered by another part (the market); before ``start``."""
        self._services[protocol] = handler

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        cfg, paths, now_ms = self._ctx.config.p2p, self._ctx.paths, self._ctx.now_ms
        assert paths.trust_file is not None
        await self.keeper.open(paths.trust_file, paths.trust_file.with_name("state.json"), self.weather)
        self.trust = self.keeper.book
        self.host = host = P2PHost(self._ctx.identity, self.validator, PenaltyBox(cfg), cfg, now_ms=now_ms)
        import libp2p  # noqa: F401 - imported here so that its logging can be routed before it runs

        route_library_logs(debug=self._ctx.config.log.level == "debug")
        host.on_reject = self.keeper.rejected
        store = PeerStore(paths.data_dir / cfg.peers_file, cfg.peer_store_size, cfg.peer_store_per_source)
        store.load()
        self.discovery = PeerDiscovery(host, cfg, store, me=self._ctx.identity.peer_id, now_ms=now_ms)
        assert self.network.answers is not None
        answers = {DISCOVERY_PROTOCOL: self.discovery.answer, WEATHER_PROTOCOL: self.network.answers.answer}
        for protocol, handler in (answers | self._services).items():
            host.serve(protocol, handler)
        self.network.host, self.network.discovery = host, self.discovery
        refuse_busy_listen(cfg.listen)
        await host.start()
        log.info("p2p.listening", peer_id=self._ctx.identity.peer_id, addrs=",".join(host.listen_addrs))
        spawn = self._supervisor.spawn
        spawn("p2p-deliveries", self.network.consume)
        spawn("p2p-trust", lambda: self.keeper.run(cfg.attestation_interval_min * 60, self._attest, self._purge))
        spawn("p2p-peers", self.network.watch_peers)
        spawn("p2p-discovery", self.discovery.run)
        ask = asker(host, cfg)
        spawn("p2p-weather-confirm", lambda: self.station.confirmer.run(ask))
        if self._ctx.config.node.role == "management" and cfg.weather_renew_s > 0:
            spawn("p2p-weather-renewal", lambda: self.station.renew_every(cfg.weather_renew_s))

    async def stop(self) -> None:
        if self.discovery is not None:
            self.discovery.store.save()  # whom it knew, for the next start
        if self.host is not None:
            await self.host.stop()
            self.host = self.network.host = None
        await self.keeper.save()

    def details(self) -> dict[str, Any]:
        return self.network.report(self.ingested, self.evicted)

    # --- wiring ------------------------------------------------------------------------

    async def _attest(self, message: Any) -> None:
        if self.host is not None:
            await self.publish(ATTESTATION_KIND, message)

    async def _purge(self) -> None:
        """Due as often as a trust round: bounties past their end leave the store."""
        await purge_expired_bounties(self.store(), self._ctx.now_ms())

    def _cortisol_floor(self) -> CortisolFloor | None:
        # The memory part offers no hormones of its own yet: they hang on its store.
        endocrine = self.store().hormone_source
        return endocrine if isinstance(endocrine, Endocrine) else None

    # --- what the skills commands and the market read (``SkillsHost``, ``market_sink``) ---

    async def publish(self, kind: GossipKind[Any], message: Any, *, now_ms: int | None = None) -> Envelope:
        """Sign ``message`` as this node and gossip it on its kind's topic; returns the envelope sent."""
        return await self.network.publish(kind, message, now_ms=now_ms)

    def trust_standing_of(self, key_hex: str) -> tuple[int, float]:
        """A hex key's rank in the live trust book, least trusted first (for the bounds' evictions)."""
        return self.keeper.standing_of(key_hex)

    def level_of_key(self, key: bytes) -> TrustLevel:
        """A peer's trust level as of the last trust round (management keys are verified)."""
        return self.keeper.level_of_key(key)

    @property
    def ctx(self) -> NodeContext:
        return self._ctx

    async def reputation(self) -> tuple[int, str | None]:
        """How peers rate this node in the live trust book, and its key."""
        return reputation_in(self.keeper.book), self._ctx.identity.public_key.hex()

    @property
    def anchors(self) -> TrustAnchors:
        return self._anchors

    def store(self) -> IntakeStore:
        return self._memory.running_store()
