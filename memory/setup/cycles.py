"""What the settings make of search: the fusion weights. (One consolidation cycle with the
configured decay is ``memory.service.upkeep``'s, for the daemon's timer and the command alike.)"""

from __future__ import annotations

from memory.retrieval.query import Weights
from memory.setup.settings import MemorySettings


def search_weights(memory: MemorySettings) -> Weights:
    """The fusion settings a search uses, from ``[memory]``."""
    return Weights(
        rrf_k=memory.rrf_k,
        vector_weight=memory.vector_weight,
        graph_weight=memory.graph_weight,
        relevance_floor=memory.relevance_floor,
    )
