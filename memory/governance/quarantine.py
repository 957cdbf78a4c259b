"""Quarantine: peer content held back from the agent until the person reviews it.

A crystal stored with ``NewCrystal.quarantine`` is ``quarantined``: left out of every search
unless the caller asks for held content, out of MEMORY.md, the bootstrap text and dream
prompts, not embedded and not linked. Its ``quarantine`` row says who sent it and why it is
held. The person then approves it (it becomes an ordinary crystal, embedded at once) or
rejects it (it is forgotten, and the same text is refused if it comes again). Content held
only because its author had no standing is released by itself once the author is trusted
here (``release_from``); content that reads like instructions waits for the person.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiosqlite

from memory.errors import CrystalNotFound, InvalidQuery
from memory.model import Crystal, HeldStatus, Lifecycle
from memory.storage.row_writes import write_transitions
from memory.storage.rows import SELECT_COLUMNS, crystal_from_row
from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True)
class HeldCrystal:
    crystal: Crystal
    source: str
    reason: str
    flags: tuple[str, ...]
    status: HeldStatus
    received_ms: int
    decided_ms: int | None
    decided_by: str | None


async def held(store: MemoryStore, *, status: HeldStatus = HeldStatus.HELD, limit: int = 100) -> list[HeldCrystal]:
    """Crystals in quarantine with ``status``, oldest first."""
    if not 1 <= limit <= 10_000:
        raise InvalidQuery(f"limit must be between 1 and 10000, got {limit}")
    async with store.reader().execute(
        f"{_HELD_SQL} WHERE q.status = ? ORDER BY q.received_ms, q.crystal_id LIMIT ?", (status.value, limit)
    ) as cursor:
        return [_held(row) for row in await cursor.fetchall()]


_HELD_SQL = (
    f"SELECT {SELECT_COLUMNS}, q.source, q.reason, q.flags, q.status, q.received_ms, q.decided_ms, q.decided_by "
    "FROM quarantine q JOIN crystals c ON c.id = q.crystal_id"
)


def _held(row: Any) -> HeldCrystal:
    source, reason, flags, state, received, decided, by = row[-7:]
    return HeldCrystal(
        crystal_from_row(row[:-7]), source, reason, tuple(json.loads(flags)), HeldStatus(state), received, decided, by
    )


async def hold_of(store: MemoryStore, crystal_id: str) -> HeldCrystal | None:
    """The quarantine row of ``crystal_id``, whatever was decided, or None if it was never held."""
    async with store.reader().execute(f"{_HELD_SQL} WHERE q.crystal_id = ?", (crystal_id,)) as cursor:
        row = await cursor.fetchone()
    return None if row is None else _held(row)


def review_note(hold: HeldCrystal | None) -> dict[str, Any] | None:
    """Where a held crystal (a bought or gossiped skill) stands, for the person: held for review and
    how to release or reject it, or what was decided. None: it was never held."""
    if hold is None:
        return None
    crystal_id = hold.crystal.id
    note: dict[str, Any] = {"status": hold.status.value, "reason": hold.reason, "flags": list(hold.flags)}
    if hold.status is HeldStatus.HELD:
        note["says"] = (
            f"held for your review ({hold.reason}): the agent does not see it until you release it with "
            f"`bitterbot-node memory quarantine approve {crystal_id}` (or reject it: "
            f"`bitterbot-node memory quarantine reject {crystal_id}`), or on the dashboard's page of the crystal"
        )
        note["release"] = f"bitterbot-node memory quarantine approve {crystal_id}"
    else:
        note["says"] = f"{hold.status.value} by {hold.decided_by or 'the node'} (it was held: {hold.reason})"
    return note


async def count_held(store: MemoryStore) -> int:
    async with store.reader().execute("SELECT count(*) FROM quarantine WHERE status = 'held'") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def was_rejected(store: MemoryStore, content_hash: str) -> bool:
    """Whether the person already rejected this text (it is then refused when it comes again)."""
    async with store.reader().execute(
        "SELECT 1 FROM quarantine WHERE content_hash = ? AND status = 'rejected' LIMIT 1", (content_hash,)
    ) as cursor:
        return await cursor.fetchone() is not None


async def approve(store: MemoryStore, crystal_id: str, *, actor: str) -> Crystal:
    """Release a held crystal to the agent: searchable, embedded and linked like any other."""
    await _decide(store, crystal_id, HeldStatus.APPROVED, actor=actor)
    await store.embed_backlog()  # this crystal, and nothing else unless something was pending anyway
    return await store.get(crystal_id)


async def release_from(store: MemoryStore, sources: list[str], *, actor: str) -> int:
    """Release what ``sources`` sent that is held only for their standing (no instruction-like flags),
    now that they are trusted here; how many crystals. Embedded at once, like an approved one."""
    if not sources:
        return 0
    now = store.now_ms()
    marks = ", ".join("?" * len(sources))
    async with store.transaction() as db:
        async with db.execute(
            "SELECT q.crystal_id, c.lifecycle FROM quarantine q JOIN crystals c ON c.id = q.crystal_id "
            f"WHERE q.status = 'held' AND q.flags = '[]' AND q.source IN ({marks})",
            sources,
        ) as cursor:
            rows = [(str(r[0]), Lifecycle(r[1])) for r in await cursor.fetchall()]
        for crystal_id, lifecycle in rows:
            await _settle(store, db, crystal_id, lifecycle, HeldStatus.RELEASED, actor=actor, now=now)
    if rows:
        await store.embed_backlog()
    return len(rows)


async def reject(store: MemoryStore, crystal_id: str, *, actor: str) -> None:
    """Forget a held crystal; the same text is refused from now on."""
    await _decide(store, crystal_id, HeldStatus.REJECTED, actor=actor)


async def _decide(store: MemoryStore, crystal_id: str, status: HeldStatus, *, actor: str) -> None:
    now = store.now_ms()
    async with store.transaction() as db:
        async with db.execute(
            "SELECT c.lifecycle FROM quarantine q JOIN crystals c ON c.id = q.crystal_id "
            "WHERE q.crystal_id = ? AND q.status = 'held'",
            (crystal_id,),
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            raise CrystalNotFound(crystal_id)
        await _settle(store, db, crystal_id, Lifecycle(row[0]), status, actor=actor, now=now)


_WHY = {
    HeldStatus.APPROVED: "approved from quarantine",
    HeldStatus.RELEASED: "released from quarantine: its author is trusted",
    HeldStatus.REJECTED: "rejected from quarantine",
}


async def _settle(
    store: MemoryStore, db: aiosqlite.Connection, crystal_id: str, lifecycle: Lifecycle, status: HeldStatus,
    *, actor: str, now: int,
) -> None:  # fmt: skip
    """Record the decision on a held crystal: approved or released, it is the agent's; rejected, expired."""
    await db.execute(
        "UPDATE quarantine SET status = ?, decided_ms = ?, decided_by = ? WHERE crystal_id = ?",
        (status.value, now, actor, crystal_id),
    )
    if status is HeldStatus.REJECTED:
        await write_transitions(db, [(crystal_id, lifecycle, Lifecycle.EXPIRED, _WHY[status])], actor, now)
        return
    await db.execute("UPDATE crystals SET quarantined = 0 WHERE id = ?", (crystal_id,))
    await write_transitions(db, [(crystal_id, lifecycle, lifecycle, _WHY[status])], actor, now)
