"""The hormonal state (``memory.dynamics.endocrine``): its levels, and the events of the work that
move it."""

from __future__ import annotations

from typing import Any

from memory.dynamics.endocrine import Endocrine
from memory.errors import InvalidRequest
from memory.service.requests import EventArgs
from memory.storage.store import MemoryStore


def levels(store: MemoryStore) -> dict[str, Any]:
    """The hormonal state: effective levels, the local cortisol, any network override."""
    source = _endocrine(store)
    state = source.state()
    effective = source.levels()
    override = state.override
    return {
        "dopamine": round(effective.dopamine, 4),
        "cortisol": round(effective.cortisol, 4),
        "oxytocin": round(effective.oxytocin, 4),
        "local_cortisol": round(state.cortisol, 4),
        "network_override": None
        if override is None
        else {"level": override.level, "until_ms": override.until_ms, "reason": override.reason},
        "halts_untrusted_ingestion": source.halts_untrusted_ingestion(),
    }


async def observe(store: MemoryStore, args: EventArgs) -> dict[str, Any]:
    """Tell the hormonal state what just happened; returns the state after."""
    await _endocrine(store).observe(args.events)
    return levels(store)


def _endocrine(store: MemoryStore) -> Endocrine:
    source = store.hormone_source
    if not isinstance(source, Endocrine):
        raise InvalidRequest("the hormonal state is off for this store")
    return source
