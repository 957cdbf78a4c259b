"""The memory's upkeep: a consolidation cycle and the dream, run by the daemon's timers and by the
``memory consolidate`` and ``memory dream`` commands alike.

``Upkeep`` keeps what the two callers share: the lock that keeps one dream at a time (the timer and
an agent's "dream now" never overlap), what the last cycle of each did (for ``status``), and where
their durations are observed. The node builds one and hands down what memory cannot read itself:
the lines about the person's world and the emerging skills, which count the marketplace's records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ground.events import get_logger
from ground.progress import Reporter, current_reporter
from memory.dynamics.consolidation import ConsolidationReport, consolidate
from memory.dynamics.importance import DecaySettings
from memory.intake.store import IntakeStore
from memory.service.requests import ConsolidateArgs
from memory.service.timing import Durations
from memory.storage.store import MemoryStore
from memory.working_memory.dream import dream
from memory.working_memory.memory_md import WorkingMemoryFiles
from memory.working_memory.synthesis import Synthesizer

# The daemon's memory logger: ``[log] parts = { "node.memory" = ... }`` names it.
log = get_logger("node.memory")

#: Lines the node tells the dream, read from the store (``memory.working_memory.dream``'s ``world``
#: and ``emerging``).
DreamLines = Callable[[MemoryStore], Awaitable[tuple[str, ...]]]

#: What ``status`` keeps of a dream's report.
_DREAM_KEPT = ("at_ms", "accepted", "rejected_because", "notes_indexed")


async def _none(_: MemoryStore) -> tuple[str, ...]:
    return ()


class Upkeep:
    """Consolidation and the dream on one store, with the configured decay, working-memory files and
    synthesizer. ``counted`` is told the crystal total after each consolidation cycle (the memory
    part's count for ``status``)."""

    def __init__(
        self,
        decay: DecaySettings,
        files: WorkingMemoryFiles,
        synthesizer: Synthesizer,
        *,
        world: DreamLines = _none,
        emerging: DreamLines = _none,
        consolidation_seconds: Durations | None = None,
        dream_seconds: Durations | None = None,
        counted: Callable[[int], None] | None = None,
    ) -> None:
        self._decay = decay
        self._files = files
        self._synthesizer = synthesizer
        self._world = world
        self._emerging = emerging
        self._consolidation_seconds = consolidation_seconds
        self._dream_seconds = dream_seconds
        self._counted = counted
        self._dreaming = asyncio.Lock()
        #: What the last consolidation cycle did, without its lists of changes and merges.
        self.last_consolidation: dict[str, Any] | None = None
        #: When the last dream ran, whether its MEMORY.md was accepted (or why not) and the notes it indexed.
        self.last_dream: dict[str, Any] | None = None

    async def consolidation_dry_run(
        self, store: MemoryStore, *, progress: Reporter | None = None
    ) -> ConsolidationReport:
        """What one cycle would change, changing nothing and keeping nothing of it."""
        return await self._cycle(store, dry_run=True, progress=progress)

    async def consolidate(self, store: MemoryStore, *, progress: Reporter | None = None) -> ConsolidationReport:
        """One consolidation cycle: rescore, expire, promote, merge, purge; its report kept for ``status``.
        ``progress`` is told each step as it ends."""
        report = await self._cycle(store, dry_run=False, progress=progress)
        if self._consolidation_seconds is not None:
            self._consolidation_seconds.observe(report.duration_ms / 1000)
        self.last_consolidation = {k: v for k, v in report.to_dict().items() if k not in ("changes", "merges")}
        if self._counted is not None:
            self._counted(int((await store.stats())["total"]))
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

    async def _cycle(self, store: MemoryStore, *, dry_run: bool, progress: Reporter | None) -> ConsolidationReport:
        levels = store.hormone_source.levels() if store.hormone_source else None
        return await consolidate(store, settings=self._decay, levels=levels, dry_run=dry_run, progress=progress)

    async def dream(self, store: IntakeStore) -> dict[str, Any]:
        """One dream cycle, never two at once: scratch notes and new memories folded into MEMORY.md.
        Its report, and the part of it kept for ``status``."""
        async with self._dreaming:
            report = await dream(
                store,
                self._files,
                self._synthesizer,
                hormones=store.hormone_source,
                world=await self._world(store),
                emerging=await self._emerging(store),
            )
        doc = report.to_dict()
        if self._dream_seconds is not None:
            self._dream_seconds.observe(report.duration_ms / 1000)
        self.last_dream = {k: doc[k] for k in _DREAM_KEPT}
        if report.accepted:
            log.info("memory.dreamt", duration_ms=report.duration_ms, notes=report.notes_indexed)
        else:
            log.warning("memory.dream_rejected", reason=report.rejected_because)
        return doc


async def consolidate_now(store: MemoryStore, upkeep: Upkeep, args: ConsolidateArgs) -> dict[str, Any]:
    """``memory consolidate``: one cycle now (kept for ``status`` like the timer's), or with
    ``dry_run`` what one would change; its progress goes to the caller's reporter."""
    progress = current_reporter()
    if args.dry_run:
        return (await upkeep.consolidation_dry_run(store, progress=progress)).to_dict()
    return (await upkeep.consolidate(store, progress=progress)).to_dict()


async def dream_now(store: IntakeStore, upkeep: Upkeep) -> dict[str, Any]:
    """``memory dream``: one dream now, after the timer's if one is running."""
    return await upkeep.dream(store)
