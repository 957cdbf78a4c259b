"""What the settings make of search and consolidation: the fusion weights, and one consolidation
cycle with the configured decay."""

from __future__ import annotations

from collections.abc import Callable

from memory.dynamics.consolidation import ConsolidationReport, consolidate
from memory.dynamics.importance import DecaySettings
from memory.retrieval.query import Weights
from memory.setup.settings import MemorySettings
from memory.storage.store import MemoryStore


def search_weights(memory: MemorySettings) -> Weights:
    """The fusion settings a search uses, from ``[memory]``."""
    return Weights(rrf_k=memory.rrf_k, vector_weight=memory.vector_weight, relevance_floor=memory.relevance_floor)


async def consolidate_as_configured(
    store: MemoryStore,
    decay: DecaySettings,
    *,
    dry_run: bool = False,
    progress: Callable[[str], None] | None = None,
) -> ConsolidationReport:
    """One consolidation cycle with the configured decay and the store's hormone levels: the
    daemon's timer, the API's on-demand cycle and the CLI without a daemon all run this."""
    levels = store.hormone_source.levels() if store.hormone_source else None
    return await consolidate(store, settings=decay, levels=levels, dry_run=dry_run, progress=progress)
