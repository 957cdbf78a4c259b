"""The memory store as a part of the daemon, plus the helper the CLI uses to open it.

The daemon keeps one store open and runs the embedding backlog in a named
background task, so crystals added in bulk (or left by a change of embedder)
gain vectors without blocking anyone.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from memory.embedders import HttpEmbedderSettings, make_embedder
from memory.embedders.base import Embedder
from memory.errors import MemoryError_
from memory.query import Weights
from memory.store import LinkSettings, MemoryStore
from node.config import Config
from node.errors import UsageError
from node.lifecycle import TaskSupervisor
from node.logs import get_logger
from node.paths import NodePaths

log = get_logger("node.memory")
BACKLOG_IDLE_S = 5.0


def search_weights(config: Config) -> Weights:
    """The fusion settings a search uses, from ``[memory]``."""
    return Weights(rrf_k=config.memory.rrf_k, vector_weight=config.memory.vector_weight)


def embedder_from_config(config: Config) -> Embedder:
    m = config.memory
    http = HttpEmbedderSettings(
        url=m.openai_url,
        model=m.openai_model,
        dimensions=m.openai_dimensions,
        api_key=os.environ.get(m.openai_api_key_env) or None,
    )
    try:
        return make_embedder(m.embedder, http)
    except MemoryError_ as exc:
        raise UsageError(f"memory.embedder = {m.embedder!r}: {exc}") from exc


async def open_store(config: Config, paths: NodePaths, now_ms: Callable[[], int] | None = None) -> MemoryStore:
    assert paths.memory_db is not None
    links = LinkSettings(
        related_threshold=config.memory.related_threshold, updates_threshold=config.memory.updates_threshold
    )
    embedder = embedder_from_config(config)
    if now_ms is None:
        return await MemoryStore.open(paths.memory_db, embedder, links=links)
    return await MemoryStore.open(paths.memory_db, embedder, links=links, now_ms=now_ms)


class MemoryPart:
    name = "memory"

    def __init__(self, config: Config, paths: NodePaths, supervisor: TaskSupervisor) -> None:
        self._config = config
        self._paths = paths
        self._supervisor = supervisor
        self.store: MemoryStore | None = None

    async def start(self) -> None:
        self.store = await open_store(self._config, self._paths)
        stats = await self.store.stats()
        log.info(
            "memory.opened",
            path=str(self._paths.memory_db),
            crystals=stats["total"],
            embedder=self.store.embedder.id,
            backlog=stats["embedding_backlog"],
        )
        self._supervisor.spawn("memory-embedder", self._drain_backlog())

    async def stop(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None

    async def _drain_backlog(self) -> None:
        while self.store is not None:
            done = await self.store.embed_backlog(batch_size=self._config.memory.embed_batch, limit=512)
            if done:
                log.info("memory.embedded", crystals=done)
            else:
                await asyncio.sleep(BACKLOG_IDLE_S)
