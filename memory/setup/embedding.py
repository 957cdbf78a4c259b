"""The daemon's background embedding: the search's vectors loaded ahead, the backlog drained in
batches (crystals added in bulk, or left by a change of embedder, gain vectors without blocking
anyone), a local model let go when idle, and how it stands (``EmbeddingProgress``, for ``status``,
the dashboard and the metrics), counted here where the work is done."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ground.events import get_logger
from memory.embedders.base import HeldModel
from memory.entities.index import index_owed
from memory.errors import MemoryError_
from memory.storage.connection import is_transient_lock
from memory.storage.store import MemoryStore

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


async def drain_backlog(store_of: Callable[[], MemoryStore | None], progress: EmbeddingProgress, batch: int) -> None:
    """Embed what waits, ``batch`` texts a call, while a store is open; idle ``BACKLOG_IDLE_S`` when none."""
    while (store := store_of()) is not None:
        started = time.perf_counter()
        try:
            done = await store.embed_backlog(batch_size=batch, limit=512)
        except Exception as exc:
            if not is_transient_lock(exc):
                raise
            # A lock that clears by itself once stopped the node (CI, with a dream writing beside
            # it). Met in the batch's write, the batch rolled back whole and stays in the backlog
            # for the next round; met in the steps after it, the rest stay owed for the next round
            # (memory.storage.after_embedding).
            log.warning("memory.embedding_deferred", error=str(exc))
            done = 0
        progress.record(done, time.perf_counter() - started)
        if done:
            log.info("memory.embedded", crystals=done, backlog=progress.backlog)
        # what was never embedded (keyword-only, or an older file) still gets its entities read
        elif not await _read_entities(store):
            await asyncio.sleep(BACKLOG_IDLE_S)


async def _read_entities(store: MemoryStore) -> int:
    try:
        return await index_owed(store)
    except Exception as exc:
        if not is_transient_lock(exc):
            raise
        log.warning("memory.entities_deferred", error=str(exc))
        return 0


async def release_idle_model(model: HeldModel, idle_s: float) -> None:
    """Let the embedder's worker go once it has been idle for ``[memory] embedder_idle_s``; the
    next text to embed starts it again (~0.6 s)."""
    while True:
        await asyncio.sleep(min(30.0, max(0.25, idle_s / 4)))
        if await asyncio.to_thread(model.release_if_idle):
            log.info("memory.embedder_released", idle_s=idle_s)


async def warm_vectors(store: MemoryStore) -> None:
    """Load the search's vector codes in the background, so the first search does not wait."""
    started = time.perf_counter()
    try:
        codes = await store.warm_vectors()
    except MemoryError_ as exc:  # only a head start: the first search loads them itself, or reports why not
        log.warning("memory.vectors_not_loaded", error=repr(exc))
        return
    log.info("memory.vectors_loaded", codes=codes, seconds=round(time.perf_counter() - started, 3))
