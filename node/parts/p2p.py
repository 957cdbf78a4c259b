"""The P2P network as a part of the daemon.

Starts the libp2p host with the validator, penalty box and trust book built from
config; consumes accepted messages (weather -> the hormonal state, skills -> memory,
attestations -> the trust book); every ``attestation_interval_min`` recomputes trust
levels (handed to the validator), gossips this node's signed attestation and saves
the book. Its control commands back ``bitterbot-node peers``, ``weather`` and
``skills share|revoke``.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope
from crypto.peer_id import ed25519_from_peer_id
from ground.events import get_logger
from ground.rates import RateLimit
from marketplace.catalog.bounties import purge_expired_bounties
from marketplace.executions import executions_by_source, good_run_days_by_source
from marketplace.gossip.peer_content import peer_source
from marketplace.ledger import paid_by_seller, purchase_outcomes_by_seller, sale_defaults_by_buyer
from marketplace.pricing import PriceSettings
from marketplace.reputation import reputation_in
from memory.dynamics.endocrine import Endocrine
from memory.governance.quarantine import release_from
from memory.intake.store import IntakeStore
from node.commands.skills_service import price_settings
from node.errors import InvalidValue
from node.logs import route_library_logs
from node.parts.memory import MemoryPart
from node.parts.weather_station import WeatherStation
from node.runtime.context import NodeContext
from node.runtime.lifecycle import TaskSupervisor
from node.runtime.ports import refuse_busy_listen
from p2p.deliveries import Delivery
from p2p.errors import HostNotRunning
from p2p.host import HostSettings, P2PHost, RequestHandler
from p2p.kinds import GossipKind, GossipKinds, Received
from p2p.network.bounds import ConnectionBounds
from p2p.network.discovery import PROTOCOL as DISCOVERY_PROTOCOL
from p2p.network.discovery import DiscoverySettings, PeerDiscovery, PeerStore
from p2p.network.relay import RelaySettings
from p2p.penalties import PenaltyBox, PenaltySettings
from p2p.trust.attestation import ATTESTATION_KIND, TrustAttestation
from p2p.trust.book import STANDING_LEVELS, TrustBook, TrustLevel, TrustLimits, compute_trust
from p2p.trust.floors import Evidence, TrustFloors
from p2p.trust.peer_listing import peer_rows
from p2p.trust.records import TrustRecords
from p2p.validation import MessageValidator, ValidatorSettings
from p2p.weather import NetworkWeather
from p2p.weather.ask import PROTOCOL as WEATHER_PROTOCOL
from p2p.weather.ask import AskSettings, WeatherAnswers, asker

log = get_logger("node.p2p")


class P2PPart:
    name = "p2p"

    def __init__(self, ctx: NodeContext, supervisor: TaskSupervisor, memory: MemoryPart) -> None:
        self._ctx = ctx
        self._supervisor = supervisor
        self._memory = memory
        cfg = ctx.config
        self._anchors = TrustAnchors.from_hex(cfg.trust.management_keys)
        assert ctx.paths.trust_file is not None
        self._trust_path = ctx.paths.trust_file
        self._state_path = self._trust_path.with_name("state.json")
        #: The gossip kinds this node speaks, each registered with its consumer by the part that owns it.
        self.gossip = GossipKinds()
        self.validator = MessageValidator(
            self._anchors,
            ValidatorSettings(
                max_envelope_bytes=cfg.wire.max_envelope_bytes,
                max_age_ms=cfg.wire.max_age_s * 1000,
                max_ahead_ms=cfg.wire.max_ahead_s * 1000,
                replay_entries=cfg.wire.replay_cache_entries,
                skill_rate=RateLimit(cfg.p2p.skill_rate_per_s, cfg.p2p.skill_burst),
                strangers_skill_rate=RateLimit(cfg.p2p.strangers_skill_rate_per_s, cfg.p2p.strangers_skill_burst),
                strangers_bounty_rate=RateLimit(cfg.p2p.strangers_bounty_rate_per_s, 10),
            ),
            kinds=self.gossip,
            own_key=ctx.identity.public_key,
        )
        self.weather = NetworkWeather(self.validator, self._endocrine, self._save)
        self._trust_limits = TrustLimits(
            max_attesters=cfg.trust.max_attesters,
            max_ratings_per_attester=cfg.trust.max_ratings_per_attester,
            max_tracked_peers=cfg.trust.max_tracked_peers,
            time_budget_s=cfg.trust.eigentrust_budget_s,
        )
        self._trust_floors = TrustFloors(
            min_days=cfg.trust.trusted_min_days,
            min_executions=cfg.trust.trusted_min_executions,
            min_paid_micro_usdc=cfg.trust.trusted_min_paid_micro_usdc,
        )
        self.trust = TrustBook(
            ctx.identity.public_key, frozenset(self._anchors), self._trust_limits, floors=self._trust_floors
        )
        #: What the quotas deleted since start: peer crystals and their bytes (``memory.governance.peer_quota``),
        #: listings and bounties (``marketplace.gossip.received_quota``).
        self.evicted = {"crystals": 0, "bytes": 0, "listings": 0, "bounties": 0}
        self.host: P2PHost | None = None
        self.discovery: PeerDiscovery | None = None
        self._levels: dict[bytes, Any] = {}
        self._records: TrustRecords | None = None  # the book's rows, once the store is open
        self.ingested = {
            "skills": 0, "revocations": 0, "weather": 0, "attestations": 0, "attestations_not_heard": 0,
            "bounties": 0, "endorsements": 0,
        }  # fmt: skip
        self._peer_summary: dict[str, Any] = {"connected": 0, "by_level": {}, "banned": 0}
        self._services: dict[str, RequestHandler] = {}
        self.weather_answers = WeatherAnswers(self.weather.sequences, AskSettings())  # replaced at start
        self.station = WeatherStation(self.weather, ctx.identity.public_key, ctx.now_ms, self.publish, self.ingested)
        self.gossip.register(self.station.kind, self.station.received)
        self.gossip.register(ATTESTATION_KIND, self._attestation)

    def add_service(self, protocol: str, handler: RequestHandler) -> None:
        """A direct-stream protocol answered by another part (the market); before ``start``."""
        self._services[protocol] = handler

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        cfg = self._ctx.config.p2p
        await self._load_state()
        await self._fold_in_local_evidence()
        await self._recompute_levels()
        self.host = P2PHost(
            self._ctx.identity,
            self.validator,
            PenaltyBox(PenaltySettings(threshold=cfg.penalty_threshold, ban_ms=int(cfg.ban_minutes * 60_000))),
            HostSettings(
                listen=tuple(cfg.listen),
                bootstrap=tuple(cfg.bootstrap),
                mdns=cfg.mdns,
                degree=cfg.degree,
                degree_low=cfg.degree_low,
                degree_high=cfg.degree_high,
                event_queue=cfg.delivery_queue,
                relay=RelaySettings(
                    offer=cfg.relay_service,
                    max_reservations=cfg.relay_max_reservations,
                    max_circuits=cfg.relay_max_circuits,
                    circuit_s=cfg.relay_circuit_s,
                    circuit_bytes=cfg.relay_circuit_bytes,
                    reachability=cfg.reachability,
                    noted_peers=cfg.peer_store_size,
                ),
                limits=ConnectionBounds(
                    max_connections=cfg.max_connections,
                    max_inbound=cfg.max_inbound_connections,
                    per_ip=cfg.connections_per_ip,
                    per_peer=cfg.connections_per_peer,
                    max_streams=cfg.max_streams,
                    streams_per_peer=cfg.streams_per_peer,
                    stream_opens_per_s=cfg.stream_opens_per_peer_per_s,
                    handshake_s=cfg.handshake_s,
                ),
            ),
            now_ms=self._ctx.now_ms,
        )
        import libp2p  # noqa: F401 - imported here so that its logging can be routed before it runs

        route_library_logs(debug=self._ctx.config.log.level == "debug")
        self.host.on_reject = self._rejected
        store = PeerStore(self._ctx.paths.data_dir / cfg.peers_file, cfg.peer_store_size, cfg.peer_store_per_source)
        store.load()
        self.discovery = PeerDiscovery(
            self.host,
            DiscoverySettings(
                target_peers=cfg.target_peers,
                discover_s=cfg.discover_s,
                store_size=cfg.peer_store_size,
                peers_per_source=cfg.peer_store_per_source,
            ),
            store,
            me=self._ctx.identity.peer_id,
            now_ms=self._ctx.now_ms,
        )
        self.host.serve(DISCOVERY_PROTOCOL, self.discovery.answer)
        asking = AskSettings(cfg.weather_ask_peers, cfg.weather_ask_timeout_s, cfg.weather_answers_per_peer_per_s)
        self.weather_answers = WeatherAnswers(self.weather.sequences, asking, now_ms=self._ctx.now_ms)
        self.host.serve(WEATHER_PROTOCOL, self.weather_answers.answer)
        for protocol, handler in self._services.items():
            self.host.serve(protocol, handler)
        refuse_busy_listen(cfg.listen)
        await self.host.start()
        log.info("p2p.listening", peer_id=self._ctx.identity.peer_id, addrs=",".join(self.host.listen_addrs))
        self._supervisor.spawn("p2p-deliveries", self._consume)
        self._supervisor.spawn("p2p-trust", self._trust_loop)
        self._supervisor.spawn("p2p-peers", self._watch_peers)
        self._supervisor.spawn("p2p-discovery", self.discovery.run)
        ask = asker(self.host, asking)
        self._supervisor.spawn("p2p-weather-confirm", lambda: self.station.confirmer.run(ask))
        if self._ctx.config.node.role == "management" and cfg.weather_renew_s > 0:
            self._supervisor.spawn("p2p-weather-renewal", lambda: self.station.renew_every(cfg.weather_renew_s))

    async def stop(self) -> None:
        if self.discovery is not None:
            self.discovery.store.save()  # whom it knew, for the next start
        if self.host is not None:
            await self.host.stop()
            self.host = None
        await self._save()

    def details(self) -> dict[str, Any]:
        host = self.host
        counters = self.validator.snapshot_counters()
        out: dict[str, Any] = {
            "peer_id": self._ctx.identity.peer_id,
            "listen": host.listen_addrs if host else [],
            "messages": counters,
            "ingested": dict(self.ingested),
            "evicted_by_quota": dict(self.evicted),
            "unconsumed": dict(self.gossip.unconsumed),
            "halted_until_ms": self.validator.halted_until_ms,
            "weather_confirm": vars(self.station.confirmer.counts) | self.weather_answers.counts(),
            "peers": dict(self._peer_summary),
        }
        if host is not None:
            out["bans"] = host.counters.bans
            out["dropped_full_queue"] = host.counters.dropped_full_queue
            out["dropped_by_lane"] = {lane.value: n for lane, n in host.deliveries.dropped.items()}
            out["waiting_by_lane"] = host.deliveries.sizes()
            out["nat"] = host.traversal()
            out["limits"] = host.limits()
        if self.discovery is not None:
            d = self.discovery
            out["discovery"] = {"target": d.settings.target_peers, "known": len(d.store), "learned": d.learned,
                                "dialled": d.dialled}  # fmt: skip
        out["trust"] = {
            "tracked_peers": len(self.trust.outcomes),
            "attesters": len(self.trust.attestations),
            "ratings": sum(len(r) for r in self.trust.attestations.values()),
            "last_computed_peers": len(self.trust.last.peers),
            "last_rounds": self.trust.last.rounds,
            "last_converged": self.trust.last.converged,
        }
        accepted = sum(t.get("accepted", 0) for t in counters.values())
        rejected = sum(n for t in counters.values() for r, n in t.items() if r != "accepted")
        halted = self.validator.halted_until_ms > self._ctx.now_ms()
        levels = ", ".join(f"{n} {level}" for level, n in sorted(self._peer_summary["by_level"].items()))
        out["summary"] = (
            f"{self._peer_summary['connected']} peers ({levels or 'none'}), "
            f"messages {accepted} accepted / {rejected} refused"
            + (", WEATHER: untrusted ingestion halted" if halted else ", weather clear")
        )
        return out

    # --- incoming ------------------------------------------------------------------------

    async def _consume(self) -> None:
        assert self.host is not None
        while True:
            delivery = await self.host.deliveries.get()
            try:
                await self._handle(delivery)
            except Exception:
                log.error("p2p.delivery_failed", exc_info=True, topic=delivery.topic)

    async def _handle(self, delivery: Delivery) -> None:
        envelope = delivery.outcome.envelope
        assert envelope is not None
        self.trust.record(envelope.author, valid=1)
        if not await self.gossip.dispatch(Received(delivery.outcome.message, envelope, delivery.topic)):
            log.info("p2p.gossip_unconsumed", kind=envelope.kind, author=envelope.author.hex()[:16])

    async def _attestation(self, received: Received) -> None:
        assert isinstance(received.message, TrustAttestation)
        # The validator already ignores attesters without standing; levels may have moved since.
        counted = self.trust.attest(received.author, received.message.ratings)
        self.ingested["attestations" if counted else "attestations_not_heard"] += 1

    def _endocrine(self) -> Endocrine | None:
        endocrine = self.store().hormone_source
        return endocrine if isinstance(endocrine, Endocrine) else None

    def _rejected(self, peer_id: str, reason: str) -> None:
        """A rejected message counts against the peer that sent it (honest peers validate first)."""
        key = ed25519_from_peer_id(peer_id)
        if key is not None:
            self.trust.record(key, invalid=1)

    async def _watch_peers(self) -> None:
        """Keep a cheap summary of the peers for ``status`` (details() must not wait on the network)."""
        # Levels come from the cache the trust loop keeps: EigenTrust is not rerun every 2 s.
        while True:
            assert self.host is not None
            try:
                snaps = await self.host.peers()
            except Exception as exc:  # noqa: BLE001 - a summary for status must never stop the node
                log.warning("p2p.peer_summary_failed", error=repr(exc))
                await asyncio.sleep(2)
                continue
            by_level: dict[str, int] = {}
            for snap in snaps:
                if snap.banned_until_ms is None:
                    level = self._level_of_peer(snap.peer_id).value
                    by_level[level] = by_level.get(level, 0) + 1
            self._peer_summary = {
                "connected": sum(by_level.values()),
                "by_level": by_level,
                "banned": sum(1 for snap in snaps if snap.banned_until_ms is not None),
            }
            await asyncio.sleep(2)

    def _level_of_peer(self, peer_id: str) -> TrustLevel:
        key = ed25519_from_peer_id(peer_id)
        if key is None:
            return TrustLevel.PROVISIONAL
        return self.level_of_key(key)

    # --- trust -----------------------------------------------------------------------------

    async def _fold_in_local_evidence(self) -> None:
        """Skills from a peer that worked (or failed) for the local agent, and how purchases from it
        ended, count in its local trust."""
        for seller, (bought, failed_purchases) in (await purchase_outcomes_by_seller(self.store())).items():
            self.trust.set_purchases(seller, bought, failed_purchases)
        for buyer, defaults in (await sale_defaults_by_buyer(self.store())).items():
            self.trust.set_defaults(buyer, defaults)
        evidence: dict[bytes, Evidence] = {}
        for source, (ok, failed) in (await executions_by_source(self.store())).items():
            peer = _peer_of(source)
            if peer is not None:
                self.trust.set_executions(peer, ok, failed)
                evidence[peer] = Evidence(executions_ok=ok)
        for source, days in (await good_run_days_by_source(self.store())).items():
            peer = _peer_of(source)
            if peer is not None:
                evidence[peer] = evidence.get(peer, Evidence()).merged(Evidence(days=days))
        for seller, (paid, days) in (await paid_by_seller(self.store())).items():
            evidence[seller] = evidence.get(seller, Evidence()).merged(Evidence(days, 0, paid))
        self.trust.set_evidence(evidence)

    async def _recompute_levels(self) -> None:
        """EigenTrust on a snapshot, in a worker thread (its time is bounded by the book's limits):
        the event loop keeps serving while it runs."""
        computation = await asyncio.to_thread(compute_trust, self.trust.snapshot())
        self.trust.install(computation)
        before = self._levels
        self._levels = {peer: t.level for peer, t in computation.peers.items()}
        newly_trusted = [
            peer_source(peer)
            for peer, level in self._levels.items()
            if level in STANDING_LEVELS and before.get(peer) not in STANDING_LEVELS
        ]
        # Held content waits for the person, unless the person set this rule (issue 27).
        rule = self._ctx.config.trust.release_held_on_trust
        released = await release_from(self.store(), newly_trusted, actor="trust") if rule else 0
        if released:
            log.info("p2p.quarantine_released", crystals=released, authors=len(newly_trusted))
        self.validator.trust_levels = dict(self._levels)
        self.validator.heard_attesters = computation.attesters | frozenset(
            peer for peer, level in self._levels.items() if level in (TrustLevel.TRUSTED, TrustLevel.VERIFIED)
        )
        log.info(
            "p2p.trust_computed",
            peers=len(computation.peers),
            attesters=len(computation.attesters),
            rounds=computation.rounds,
            converged=computation.converged,
        )

    async def _trust_loop(self) -> None:
        interval = self._ctx.config.p2p.attestation_interval_min * 60
        while True:
            await asyncio.sleep(interval)
            await self._fold_in_local_evidence()
            await self._recompute_levels()
            await purge_expired_bounties(self.store(), self._ctx.now_ms())
            ratings = self.trust.my_ratings()
            if ratings and self.host is not None:
                await self.publish(ATTESTATION_KIND, TrustAttestation(tuple(ratings)))
            await self._save()

    # --- commands --------------------------------------------------------------------------

    async def peer_listing(self, limit: int) -> list[dict[str, Any]]:
        """Peers with trust levels, as of the last trust round (``p2p.trust.peer_listing``): a request must
        not cost an EigenTrust run."""
        if self.host is None:
            raise HostNotRunning()
        snapshots = await self.host.peers()
        return peer_rows(snapshots, self.trust, self.validator.level_of, limit=limit)

    async def broadcast_weather(self, level: float, duration_s: int, reason: str) -> dict[str, Any]:
        if self._ctx.config.node.role != "management":
            raise InvalidValue('only a management node broadcasts weather (node.role = "management")')
        if not 0.0 <= level <= 1.0:
            raise InvalidValue("level must be in [0, 1]")
        weather = await self.station.broadcast(round(level * 1000), duration_s, reason)
        return {"seq": weather.seq, "until_ms": weather.until_ms, "level": weather.level, "reason": reason}

    async def weather_report(self) -> dict[str, Any]:
        return self.weather.report(self._ctx.now_ms())

    async def dial(self, address: str) -> dict[str, Any]:
        if self.host is None:
            raise HostNotRunning()
        return {"peer_id": await self.host.connect(address)}

    # --- helpers ---------------------------------------------------------------------------

    async def publish(self, kind: GossipKind[Any], message: Any, *, now_ms: int | None = None) -> Envelope:
        """Sign ``message`` as this node and gossip it on its kind's topic; returns the envelope sent."""
        if self.host is None:
            raise HostNotRunning()
        envelope = kind.seal(self._ctx.identity, message, now_ms or self._ctx.now_ms())
        await self.host.publish(kind.topic, envelope.encode())
        return envelope

    def trust_standing_of(self, key_hex: str) -> tuple[int, float]:
        """A hex key's rank in the live trust book, least trusted first (for the bounds' evictions)."""
        return self.trust.standing_of(key_hex)

    def level_of_key(self, key: bytes) -> TrustLevel:
        """A peer's trust level as of the last trust round (management keys are verified)."""
        return self._levels.get(key) or self.validator.level_of(key)

    @property
    def ctx(self) -> NodeContext:
        return self._ctx

    def price_settings(self) -> PriceSettings:
        return price_settings(self._ctx.config.marketplace)

    async def reputation(self) -> tuple[int, str | None]:
        """How peers rate this node in the live trust book, and its key."""
        return reputation_in(self.trust), self._ctx.identity.public_key.hex()

    @property
    def anchors(self) -> TrustAnchors:
        return self._anchors

    def store(self) -> IntakeStore:
        return self._memory.running_store()

    async def _load_state(self) -> None:
        """The trust book and weather sequences from the database, after importing the JSON files
        an earlier release kept (a damaged one is set aside for inspection, never fatal at start)."""
        me, limits = self._ctx.identity.public_key, self._trust_limits
        records = TrustRecords(self.store())
        self._records = records
        for path in (self._trust_path, self._state_path):
            try:
                if path is self._trust_path:
                    imported = await records.import_trust_file(path, me, limits)
                else:
                    imported = await records.import_state_file(path)
            except ValueError as exc:
                damaged = path.with_name(f"{path.name}.damaged-{self._ctx.now_ms()}")
                await asyncio.to_thread(os.replace, path, damaged)
                log.warning("p2p.state_set_aside", error=str(exc), kept_as=str(damaged))
                continue
            if imported:
                log.info("p2p.state_imported", file=str(path), kept_as=f"{path.name}.imported")
        self.trust = await records.load(me, frozenset(self._anchors), limits)
        self.trust.floors = self._trust_floors
        self.weather.restore(*await records.weather_sequences(), me=self._ctx.identity.public_key)

    async def _save(self) -> None:
        if self._records is None:
            return
        await self._records.save(self.trust)
        await self._records.save_weather_sequences(self.weather.own_seq, self.weather.sequences.snapshot())


def _peer_of(source: str) -> bytes | None:
    """The peer key a ``peer:<hex>`` source names, or None."""
    try:
        peer = bytes.fromhex(source.removeprefix("peer:"))
    except ValueError:
        return None
    return peer if len(peer) == 32 else None
