"""The memory store as a part of the daemon, plus the helpers the CLI uses to open it.

The daemon keeps one store open with its hormonal state attached, and runs three
named background tasks: the embedding backlog (crystals added in bulk, or left by
a change of embedder, gain vectors without blocking anyone), consolidation every
``[consolidation] interval_min`` and the dream cycle every ``[dream] interval_min``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from typing import Any

from crypto.errors import KeyFileError
from crypto.identity import read_key_file_info
from ground.clock import wall_clock_ms
from ground.events import get_logger
from ground.progress import current_reporter
from marketplace.exchange.ledger import ledger, niche_line
from marketplace.schema import MARKET_SCHEMA
from memory.capture.llm_extract import LlmExtractor
from memory.cognition.curiosity import Curiosity
from memory.cognition.llm_typer import LlmTyper
from memory.cognition.refine_type import refine_type
from memory.dynamics.consolidation import ConsolidationReport, consolidate
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import HormoneSettings
from memory.dynamics.importance import DAY_MS, DecaySettings
from memory.embedders import make_embedder
from memory.embedders.base import Embedder, HeldModel, Vectors
from memory.embedders.openai_http import HttpEmbedderSettings
from memory.errors import MemoryError_
from memory.graph import auto_link
from memory.llm import ChatEndpoint
from memory.retrieval.query import Weights
from memory.storage.after_embedding import owed_count
from memory.storage.connection import is_transient_lock
from memory.storage.counts import crystal_total
from memory.storage.store import EmbeddedHook, LinkSettings, MemoryStore
from memory.supersession.detect import Supersession
from memory.supersession.llm_judge import LlmJudge
from memory.working_memory.dream import dream
from memory.working_memory.synthesis import ChatSynthesizer, ExtractiveSynthesizer, Synthesizer
from node.config import Config
from node.errors import PartNotRunning, UsageError
from node.parts.capture_watch import CaptureWatcher
from node.parts.metrics import NodeMetrics
from node.paths import NodePaths
from node.runtime.lifecycle import TaskSupervisor
from p2p.schema import P2P_SCHEMA

log = get_logger("node.memory")
BACKLOG_IDLE_S = 5.0


@dataclass(slots=True)
class EmbeddingProgress:
    """How the background embedding stands, for ``status``, the dashboard and the metrics: what waits,
    what was embedded since the daemon started, and the rate (over the last runs) that gives an ETA."""

    backlog: int = 0
    embedded: int = 0
    per_s: float | None = None
    steps_owed: int = 0  # embedded, their after-steps (typing by meaning, links, supersession) still to run
    steps_set_aside: int = 0  # whose after-steps failed MAX_ATTEMPTS times: logged, left for the person

    def record(self, count: int, seconds: float) -> None:
        self.embedded += count
        self.backlog = max(0, self.backlog - count)
        if count and seconds > 0:
            rate = count / seconds
            self.per_s = rate if self.per_s is None else 0.7 * self.per_s + 0.3 * rate

    def as_dict(self) -> dict[str, Any]:
        eta = round(self.backlog / self.per_s) if self.backlog and self.per_s else None
        per_s = round(self.per_s, 1) if self.per_s else None
        return {
            "backlog": self.backlog,
            "embedded": self.embedded,
            "per_s": per_s,
            "eta_s": eta,
            "steps_owed": self.steps_owed,
            "steps_set_aside": self.steps_set_aside,
        }

    def summary(self) -> str | None:
        """ "1,200 waiting to be embedded (about 4 min)", what embedded crystals still owe, or None."""
        said = []
        if self.backlog:
            eta = self.as_dict()["eta_s"]
            about = f" (about {max(1, round(eta / 60))} min)" if eta is not None else ""
            said.append(f"{self.backlog:,} waiting to be embedded{about}")
        if self.steps_set_aside:
            said.append(f"{self.steps_set_aside:,} whose links and supersession failed (see the log)")
        return ", ".join(said) or None


def search_weights(config: Config) -> Weights:
    """The fusion settings a search uses, from ``[memory]``."""
    return Weights(
        rrf_k=config.memory.rrf_k,
        vector_weight=config.memory.vector_weight,
        relevance_floor=config.memory.relevance_floor,
    )


def embedder_from_config(config: Config, *, in_worker: bool = False) -> Embedder:
    """The configured embedder; ``in_worker`` (the daemon) runs a local model in a worker process
    that is let go after ``[memory] embedder_idle_s`` unused."""
    m = config.memory
    http = HttpEmbedderSettings(
        url=m.openai_url,
        model=m.openai_model,
        dimensions=m.openai_dimensions,
        api_key=os.environ.get(m.openai_api_key_env) or None,
    )
    try:
        idle_s = m.embedder_idle_s if in_worker else None
        return make_embedder(m.embedder, http, worker_idle_s=idle_s, fold_weights=m.minilm_fold_weights)
    except MemoryError_ as exc:
        raise UsageError(f"memory.embedder = {m.embedder!r}: {exc}") from exc


def hormone_settings(config: Config) -> HormoneSettings:
    return HormoneSettings(**config.hormones.model_dump())


def decay_settings(config: Config) -> DecaySettings:
    c = config.consolidation
    return DecaySettings(
        decay_rate_per_ms=c.decay_rate_per_ms,
        forget_threshold=c.forget_threshold,
        promote_threshold=c.promote_threshold,
        merge_similarity=c.merge_similarity,
        emotion_decay_resistance=c.emotion_decay_resistance,
        retention_ms=c.retention_days * DAY_MS,
    )


async def consolidate_as_configured(
    store: MemoryStore,
    config: Config,
    *,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ConsolidationReport:
    """One consolidation cycle with the config's decay settings and the store's hormone levels:
    the daemon's timer, the API's on-demand cycle and the CLI without a daemon all run this."""
    levels = store.hormone_source.levels() if store.hormone_source else None
    return await consolidate(store, settings=decay_settings(config), levels=levels, dry_run=dry_run, progress=progress)


def synthesizer_from_config(config: Config) -> Synthesizer:
    d = config.dream
    if d.synthesizer == "chat":
        return ChatSynthesizer(
            ChatEndpoint(
                url=d.chat_url,
                model=d.chat_model,
                api_key=os.environ.get(d.chat_api_key_env) or None,
                timeout_s=d.chat_timeout_s,
            )
        )
    return ExtractiveSynthesizer()


def chat_endpoint(config: Config) -> ChatEndpoint:
    llm = config.llm
    return ChatEndpoint(llm.url, llm.model, os.environ.get(llm.api_key_env) or None, llm.timeout_s)


def embedded_hook(config: Config) -> EmbeddedHook:
    """What runs after each embedding: the automatic type decided again by words and meaning (before
    supersession, which reads the type), then graph links, and supersession unless it is off."""
    then: EmbeddedHook
    if config.memory.supersession == "off":
        then = auto_link
    else:
        judge = LlmJudge(chat_endpoint(config)) if config.memory.supersession == "llm" else None
        then = Supersession(judge).hook()

    async def after_embedding(store: MemoryStore, crystal_id: str, vector: Vectors) -> int:
        await refine_type(store, crystal_id, vector)
        return await then(store, crystal_id, vector)

    return after_embedding


async def open_store(
    config: Config, paths: NodePaths, now_ms: Callable[[], int] | None = None, *, in_worker: bool = False
) -> MemoryStore:
    """The node's memory file, opened with the configured embedder (``in_worker``: see
    ``embedder_from_config``); its owner closes the embedder after the store (``close_store``)."""
    assert paths.memory_db is not None
    links = LinkSettings(
        related_threshold=config.memory.related_threshold, updates_threshold=config.memory.updates_threshold
    )
    embedder = embedder_from_config(config, in_worker=in_worker)
    store = await MemoryStore.open(
        paths.memory_db,
        embedder,
        links=links,
        now_ms=now_ms or wall_clock_ms,
        on_embedded=embedded_hook(config),
        schemas=(MARKET_SCHEMA, P2P_SCHEMA),  # the marketplace and the network keep their tables in the same file
    )
    try:
        await Endocrine.attach(store, hormone_settings(config))
        await Curiosity.attach(store, max_open=config.memory.max_curiosity_gaps)
        if config.memory.typer == "llm":
            store.typer.llm = LlmTyper(chat_endpoint(config))
    except BaseException:
        await close_store(store)
        raise
    return store


async def close_store(store: MemoryStore) -> None:
    """Close the store, then let its embedder's worker go (when it has one)."""
    try:
        await store.close()
    finally:
        if isinstance(store.embedder, HeldModel):
            await asyncio.to_thread(store.embedder.close)


async def world_lines(store: MemoryStore, paths: NodePaths) -> tuple[str, ...]:
    """What other parts of the node tell the dream about the person's world: the market ledger."""
    try:
        me: str | None = read_key_file_info(paths.key_file).public_key.hex()
    except KeyFileError:
        me = None
    line = niche_line(await ledger(store, me))
    return (line,) if line else ()


class MemoryPart:
    name = "memory"

    def __init__(
        self,
        config: Config,
        paths: NodePaths,
        supervisor: TaskSupervisor | None,
        *,
        metrics: NodeMetrics | None = None,
    ) -> None:
        self._config = config
        self._paths = paths
        self._supervisor = supervisor
        self.store: MemoryStore | None = None
        self.files = paths.working_memory_files()
        self.synthesizer = synthesizer_from_config(config)
        self._crystals = 0
        self.embedding = EmbeddingProgress()
        self._last_consolidation: dict[str, Any] | None = None
        self._last_dream: dict[str, Any] | None = None
        self.weights = search_weights(config)
        self.metrics = metrics
        #: ``[capture] extractor = "llm"``: a model picks what to keep from a conversation.
        self.capture_extractor = LlmExtractor(chat_endpoint(config)) if config.capture.extractor == "llm" else None
        #: Continuous capture (``[capture] watch``): its loop and its figures for ``status``.
        self.capture = CaptureWatcher(config.capture, self.capture_extractor, metrics, self._captured)
        self._dreaming = asyncio.Lock()  # the timer and an agent's "dream now" never overlap

    @property
    def embeds_in_background(self) -> bool:
        """Whether a daemon's embedder drains the backlog (else a command embeds what it stored)."""
        return self._supervisor is not None and self.store is not None

    def running_store(self) -> MemoryStore:
        if self.store is None:
            raise PartNotRunning("the memory store is not open")
        return self.store

    async def dream_now(self) -> dict[str, Any]:
        return await self._dream(self.running_store())

    async def open(self, *, in_worker: bool = False) -> None:
        """Open the store without the timers: the local client runs commands on it this way."""
        self.store = await open_store(self._config, self._paths, in_worker=in_worker)

    async def start(self) -> None:
        """Open the store and start the timers (the daemon; ``supervisor`` owns the tasks)."""
        assert self._supervisor is not None, "a part started by a daemon has its supervisor"
        await self.open(in_worker=True)
        assert self.store is not None
        stats = await self.store.stats()
        log.info(
            "memory.opened",
            path=str(self._paths.memory_db),
            crystals=stats["total"],
            embedder=self.store.embedder.id,
            backlog=stats["embedding_backlog"],
        )
        self._crystals = int(stats["total"])
        self.embedding.backlog = int(stats["embedding_backlog"])
        self._supervisor.spawn("memory-warm-vectors", self._warm_vectors)
        self._supervisor.spawn("memory-embedder", self._drain_backlog)
        embedder = self.store.embedder
        if isinstance(embedder, HeldModel) and self._config.memory.embedder_idle_s > 0:
            self._supervisor.spawn("memory-embedder-release", lambda: self._release_idle_model(embedder))
        self._supervisor.spawn(
            "memory-consolidation", lambda: self._every(self._config.consolidation.interval_min, self._consolidate)
        )
        self._supervisor.spawn("memory-dream", lambda: self._every(self._config.dream.interval_min, self._dream))
        if self._config.capture.watch:
            self._supervisor.spawn("memory-capture-watch", lambda: self.capture.run(lambda: self.store))

    async def _warm_vectors(self) -> None:
        """Load the search's vector codes in the background, so the first search does not wait."""
        assert self.store is not None
        started = time.perf_counter()
        try:
            codes = await self.store.warm_vectors()
        except MemoryError_ as exc:  # only a head start: the first search loads them itself, or reports why not
            log.warning("memory.vectors_not_loaded", error=repr(exc))
            return
        log.info("memory.vectors_loaded", codes=codes, seconds=round(time.perf_counter() - started, 3))

    async def stop(self) -> None:
        if self.store is not None:
            store, self.store = self.store, None
            await close_store(store)

    async def refresh(self) -> None:
        """Read the crystal count and the embedding backlog anew (the daemon asks before each status:
        an import beside the daemon adds to both)."""
        if self.store is not None:
            self._crystals = await crystal_total(self.store.reader(), None)
            self.embedding.backlog = await self.store.backlog_size()
            self.embedding.steps_owed, self.embedding.steps_set_aside = await owed_count(self.store)

    def details(self) -> dict[str, Any]:
        """For ``status``: counts, hormones, and what the last consolidation and dream did."""
        out: dict[str, Any] = {
            "crystals": self._crystals,
            "last_consolidation": self._last_consolidation,
            "last_dream": self._last_dream,
            "embedding": self.embedding.as_dict(),
        }
        if self.store is not None and isinstance(self.store.embedder, HeldModel):
            out["embedding"]["model_loaded"] = self.store.embedder.loaded
        if (capture := self.capture.details()) is not None:
            out["capture"] = capture
        store = self.store
        levels = store.hormone_source.levels() if store is not None and store.hormone_source else None
        if levels is not None:
            out["hormones"] = {k: round(v, 3) for k, v in asdict(levels).items()}
        parts = [f"{self._crystals} crystals"]
        if waiting := self.embedding.summary():
            parts.append(waiting)
        if levels is not None:
            parts.append(
                f"dopamine {levels.dopamine:.2f} cortisol {levels.cortisol:.2f} oxytocin {levels.oxytocin:.2f}"
            )
        if self._last_dream is not None:
            parts.append("last dream " + ("ok" if self._last_dream["accepted"] else "rejected"))
        if (capturing := self.capture.summary()) is not None:
            parts.append(capturing)
        out["summary"] = ", ".join(parts)
        return out

    async def _release_idle_model(self, model: HeldModel) -> None:
        """Let the embedder's worker go once it has been idle for ``[memory] embedder_idle_s``; the
        next text to embed starts it again (~0.6 s)."""
        idle_s = self._config.memory.embedder_idle_s
        while True:
            await asyncio.sleep(min(30.0, max(0.25, idle_s / 4)))
            if await asyncio.to_thread(model.release_if_idle):
                log.info("memory.embedder_released", idle_s=idle_s)

    async def _every(self, minutes: float, work: Callable[[MemoryStore], Awaitable[object]]) -> None:
        while True:
            await asyncio.sleep(minutes * 60)
            if self.store is None:
                return
            await work(self.store)

    async def consolidate_now(self, *, dry_run: bool = False) -> dict[str, Any]:
        store = self.running_store()
        if dry_run:
            report = await consolidate_as_configured(store, self._config, dry_run=True, progress=current_reporter())
            return report.to_dict()
        return (await self._consolidate(store, progress=current_reporter())).to_dict()

    async def _consolidate(
        self, store: MemoryStore, *, progress: Callable[[str], None] | None = None
    ) -> ConsolidationReport:
        report = await consolidate_as_configured(store, self._config, progress=progress)
        if self.metrics is not None:
            self.metrics.consolidation_seconds.observe(report.duration_ms / 1000)
        self._last_consolidation = {k: v for k, v in report.to_dict().items() if k not in ("changes", "merges")}
        self._crystals = int((await store.stats())["total"])
        log.info(
            "memory.consolidated",
            duration_ms=report.duration_ms,
            rescored=report.rescored,
            expired=report.expired_by_decay + report.expired_by_ttl,
            promoted=report.promoted,
            merged=report.merged,
            purged=report.purged,
        )
        return report

    async def _dream(self, store: MemoryStore) -> dict[str, Any]:
        async with self._dreaming:
            report = await dream(
                store,
                self.files,
                self.synthesizer,
                hormones=store.hormone_source,
                world=await world_lines(store, self._paths),
                emerging=await emerging_lines(store),
            )
        doc = report.to_dict()
        if self.metrics is not None:
            self.metrics.dream_seconds.observe(report.duration_ms / 1000)
        self._last_dream = {k: doc[k] for k in ("at_ms", "accepted", "rejected_because", "notes_indexed")}
        if report.accepted:
            log.info("memory.dreamt", duration_ms=report.duration_ms, notes=report.notes_indexed)
        else:
            log.warning("memory.dream_rejected", reason=report.rejected_because)
        return doc

    def _captured(self, stored: int) -> None:
        self._crystals += stored
        self.embedding.backlog += stored

    async def _drain_backlog(self) -> None:
        while self.store is not None:
            started = time.perf_counter()
            try:
                done = await self.store.embed_backlog(batch_size=self._config.memory.embed_batch, limit=512)
            except Exception as exc:
                if not is_transient_lock(exc):
                    raise
                # A lock that clears by itself once stopped the node (CI, with a dream writing beside
                # it). Met in the batch's write, the batch rolled back whole and stays in the backlog
                # for the next round; met in the steps after it, the rest stay owed for the next round
                # (memory.storage.after_embedding).
                log.warning("memory.embedding_deferred", error=str(exc))
                done = 0
            self.embedding.record(done, time.perf_counter() - started)
            if done:
                log.info("memory.embedded", crystals=done, backlog=self.embedding.backlog)
            else:
                await asyncio.sleep(BACKLOG_IDLE_S)


async def emerging_lines(store: MemoryStore) -> tuple[str, ...]:
    """MEMORY.md's lines for the emerging skills, counting the executions the marketplace recorded:
    the eight most confident, those answering a live bounty first. Chosen before they are ordered,
    so a stranger's bounty reorders the lines and never brings one in."""
    from marketplace.catalog.bounties import with_answered_bounties
    from marketplace.executions import executions_per_crystal
    from memory.emerging.patterns import bounty_first
    from memory.emerging.practice import emerging_skills

    found = await emerging_skills(store, await executions_per_crystal(store))
    return tuple(skill.line() for skill in bounty_first(await with_answered_bounties(store, found[:8])))
