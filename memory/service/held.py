"""Peer content held back from the agent (``memory.governance.quarantine``): the list, and the
person's decisions on each held crystal (the command table asks ``DECIDE_QUARANTINE`` first)."""

from __future__ import annotations

from typing import Any

from memory.governance import quarantine
from memory.service.caller import Caller
from memory.service.requests import QuarantineArgs, ShowArgs
from memory.storage.store import MemoryStore
from memory.transfer.records import crystal_fields


async def held(store: MemoryStore, args: QuarantineArgs) -> list[dict[str, Any]]:
    """What is held (or was approved or rejected), with where it came from and why it is held."""
    return [
        {
            "crystal": crystal_fields(item.crystal),
            "source": item.source,
            "reason": item.reason,
            "flags": list(item.flags),
            "status": item.status.value,
            "received_ms": item.received_ms,
            "decided_ms": item.decided_ms,
            "decided_by": item.decided_by,
        }
        for item in await quarantine.held(store, status=args.status, limit=args.limit)
    ]


async def approve(store: MemoryStore, args: ShowArgs, caller: Caller) -> dict[str, Any]:
    """Release a held crystal to the agent (embedded, searchable)."""
    return {"approved": crystal_fields(await quarantine.approve(store, args.id, actor=caller.actor))}


async def reject(store: MemoryStore, args: ShowArgs, caller: Caller) -> dict[str, Any]:
    """Forget a held crystal; the same text is refused from now on."""
    await quarantine.reject(store, args.id, actor=caller.actor)
    return {"rejected": args.id}
