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
from marketplace.schema import MARKET_SCHEMA
from memory.embedders.base import HeldModel
from memory.intake.store import IntakeStore
from memory.service.upkeep import Upkeep
from memory.setup.cycles import search_weights
from memory.setup.embedding import EmbeddingProgress, drain_backlog, release_idle_model, warm_vectors
from memory.setup.endpoints import configured_extractor, configured_synthesizer
from memory.setup.store import close_store, open_store
from memory.storage.after_embedding import owed_count
from memory.storage.counts import crystal_total
from memory.sync.schema import SYNC_SCHEMA
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
                            in_worker=in_worker, schemas=(MARKET_SCHEMA, P2P_SCHEMA, SYNC_SCHEMA))  # fmt: skip


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
        self._crystals = 0
        self.embedding = EmbeddingProgress()
        self.weights = search_weights(config.memory)
        #: Where each search's duration is observed, by mode (``memory.service.recall.search``).
        self.search_times = metrics.search_seconds if metrics is not None else None
        #: Consolidation and the dream: the timers below and the commands run them here.
        self.upkeep = Upkeep(
            config.consolidation,
            self.files,
            configured_synthesizer(config.dream),
            world=lambda store: world_lines(store, paths),
            emerging=emerging_lines,
            consolidation_seconds=metrics.consolidation_seconds if metrics is not None else None,
            dream_seconds=metrics.dream_seconds if metrics is not None else None,
            counted=self._counted,
        )
        #: ``[capture] extractor = "llm"``: a model picks what to keep from a conversation.
        self.capture_extractor = configured_extractor(config.capture, config.llm)
        #: Continuous capture (``[capture] watch``): its loop and its figures for ``status``.
        self.capture = CaptureWatcher(config.capture, self.capture_extractor, metrics, self._captured)

    @property
    def embeds_in_background(self) -> bool:
        """Whether a daemon's embedder drains the backlog (else a command embeds what it stored)."""
        return self._supervisor is not None and self.store is not None

    def running_store(self) -> IntakeStore:
        if self.store is None:
            raise PartNotRunning("the memory store is not open")
        return self.store

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
        if self._config.devices.embeds:  # else the vectors come from a device of the person's that embeds
            self._supervisor.spawn("memory-embedder", lambda: drain_backlog(lambda: self.store, self.embedding, batch))
        embedder = store.embedder
        if isinstance(embedder, HeldModel) and idle_s > 0:
            self._supervisor.spawn("memory-embedder-release", lambda: release_idle_model(embedder, idle_s))
        upkeep = self.upkeep
        self._supervisor.spawn(
            "memory-consolidation", lambda: self._every(self._config.consolidation.interval_min, upkeep.consolidate)
        )
        self._supervisor.spawn("memory-dream", lambda: self._every(self._config.dream.interval_min, upkeep.dream))
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
            "last_consolidation": self.upkeep.last_consolidation,
            "last_dream": self.upkeep.last_dream,
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
        if (dreamt := self.upkeep.last_dream) is not None:
            parts.append("last dream " + ("ok" if dreamt["accepted"] else "rejected"))
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

    def _counted(self, crystals: int) -> None:
        self._crystals = crystals

    def _captured(self, stored: int) -> None:
        self._crystals += stored
        self.embedding.backlog += stored
