"""The memory store as a part of the daemon: it opens the store as the config says (``memory.setup``),
runs its named background tasks and says how they stand.

The daemon keeps one store open with its hormonal state attached, and runs the embedding backlog
(``memory.setup.embedding``), consolidation every ``[consolidation] interval_min`` and the dream
cycle every ``[dream] interval_min``. The CLI without a daemon opens the same store
(``open_node_store``) without the timers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from ground.events import get_logger
from ground.progress import current_reporter
from marketplace.schema import MARKET_SCHEMA
from memory.dynamics.consolidation import ConsolidationReport
from memory.embedders.base import HeldModel
from memory.intake.store import IntakeStore
from memory.setup.cycles import consolidate_as_configured, search_weights
from memory.setup.embedding import EmbeddingProgress, drain_backlog, release_idle_model, warm_vectors
from memory.setup.endpoints import configured_extractor, configured_synthesizer
from memory.setup.store import close_store, open_store
from memory.storage.after_embedding import owed_count
from memory.storage.counts import crystal_total
from memory.storage.store import MemoryStore
from memory.working_memory.dream import dream
from node.config import Config
from node.errors import PartNotRunning
from node.parts.capture_watch import CaptureWatcher
from node.parts.dream_lines import emerging_lines, world_lines
from node.parts.metrics import NodeMetrics
from node.paths import NodePaths
from node.runtime.lifecycle import TaskSupervisor
from p2p.schema import P2P_SCHEMA

log = get_logger("node.memory")


async def open_node_store(
    config: Config, paths: NodePaths, now_ms: Callable[[], int] | None = None, *, in_worker: bool = False
) -> IntakeStore:
    """The node's memory file, opened as its config says (``memory.setup.store.open_store``), with the
    marketplace's and the network's tables in the same file; close it with ``close_store``."""
    assert paths.memory_db is not None
    return await open_store(paths.memory_db, config.memory, config.hormones, config.llm, now_ms,
                            in_worker=in_worker, schemas=(MARKET_SCHEMA, P2P_SCHEMA))  # fmt: skip


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
        self.store: IntakeStore | None = None
        self.files = paths.working_memory_files()
        self.synthesizer = configured_synthesizer(config.dream)
        self._crystals = 0
        self.embedding = EmbeddingProgress()
        self._last_consolidation: dict[str, Any] | None = None
        self._last_dream: dict[str, Any] | None = None
        self.weights = search_weights(config.memory)
        self.metrics = metrics
        #: ``[capture] extractor = "llm"``: a model picks what to keep from a conversation.
        self.capture_extractor = configured_extractor(config.capture, config.llm)
        #: Continuous capture (``[capture] watch``): its loop and its figures for ``status``.
        self.capture = CaptureWatcher(config.capture, self.capture_extractor, metrics, self._captured)
        self._dreaming = asyncio.Lock()  # the timer and an agent's "dream now" never overlap

    @property
    def embeds_in_background(self) -> bool:
        """Whether a daemon's embedder drains the backlog (else a command embeds what it stored)."""
        return self._supervisor is not None and self.store is not None

    def running_store(self) -> IntakeStore:
        if self.store is None:
            raise PartNotRunning("the memory store is not open")
        return self.store

    async def dream_now(self) -> dict[str, Any]:
        return await self._dream(self.running_store())

    async def open(self, *, in_worker: bool = False) -> None:
        """Open the store without the timers: the local client runs commands on it this way."""
        self.store = await open_node_store(self._config, self._paths, in_worker=in_worker)

    async def start(self) -> None:
        """Open the store and start the timers (the daemon; ``supervisor`` owns the tasks)."""
        assert self._supervisor is not None, "a part started by a daemon has its supervisor"
        await self.open(in_worker=True)
        assert self.store is not None
        store = self.store
        stats = await store.stats()
        log.info(
            "memory.opened",
            path=str(self._paths.memory_db),
            crystals=stats["total"],
            embedder=store.embedder.id,
            backlog=stats["embedding_backlog"],
        )
        self._crystals = int(stats["total"])
        self.embedding.backlog = int(stats["embedding_backlog"])
        self._supervisor.spawn("memory-warm-vectors", lambda: warm_vectors(store))
        batch, idle_s = self._config.memory.embed_batch, self._config.memory.embedder_idle_s
        self._supervisor.spawn("memory-embedder", lambda: drain_backlog(lambda: self.store, self.embedding, batch))
        embedder = store.embedder
        if isinstance(embedder, HeldModel) and idle_s > 0:
            self._supervisor.spawn("memory-embedder-release", lambda: release_idle_model(embedder, idle_s))
        self._supervisor.spawn(
            "memory-consolidation", lambda: self._every(self._config.consolidation.interval_min, self._consolidate)
        )
        self._supervisor.spawn("memory-dream", lambda: self._every(self._config.dream.interval_min, self._dream))
        if self._config.capture.watch:
            self._supervisor.spawn("memory-capture-watch", lambda: self.capture.run(lambda: self.store))

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

    async def _every(self, minutes: float, work: Callable[[IntakeStore], Awaitable[object]]) -> None:
        while True:
            await asyncio.sleep(minutes * 60)
            if self.store is None:
                return
            await work(self.store)

    async def consolidate_now(self, *, dry_run: bool = False) -> dict[str, Any]:
        store = self.running_store()
        if dry_run:
            decay = self._config.consolidation
            report = await consolidate_as_configured(store, decay, dry_run=True, progress=current_reporter())
            return report.to_dict()
        return (await self._consolidate(store, progress=current_reporter())).to_dict()

    async def _consolidate(
        self, store: MemoryStore, *, progress: Callable[[str], None] | None = None
    ) -> ConsolidationReport:
        report = await consolidate_as_configured(store, self._config.consolidation, progress=progress)
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

    async def _dream(self, store: IntakeStore) -> dict[str, Any]:
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
