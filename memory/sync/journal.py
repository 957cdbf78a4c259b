"""The journal: what changed in this device's memory, said as operations of its own.

The triggers of ``memory.sync.schema`` mark every crystal whose row changed; ``write_down`` reads
each marked row as an image, compares it with the image sync last took, and appends the
operations between them (``memory.sync.image.drafts``) under this device's next numbers and
clock. It runs in one transaction, so a kill leaves the marks to be read again, never half an
operation. Who said each change comes from the row (the words' speaker) or its audit trail.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import aiosqlite

from ground.authority import Speaker
from memory.model import Crystal, Lifecycle, Lifespan
from memory.storage.row_writes import crystal_any
from memory.storage.rows import SELECT_COLUMNS, crystal_from_row
from memory.storage.vectors import float_table_of
from memory.sync.clock import HybridClock
from memory.sync.image import Image, drafts, loads
from memory.sync.operations import Change, Operation
from memory.sync.rows import append_own, empty_words
from memory.transfer.records import crystal_fields

#: The audit trail's names for the person (``node.actor``: the CLI and the dashboard) and the agent.
#: Every other name is the node's own machinery (consolidation, decay, capture, ...).
_PEOPLE = frozenset({"cli", "dashboard", "person"})
_AGENTS = frozenset({"agent"})

#: The fields of a crystal a STORE's details leave out: its text (the operation's own), this device's
#: own use of it, and its vector.
_LOCAL_FIELDS = frozenset({"text", "access_count", "last_access_ms", "embedded_with", "dream_count", "last_dream_ms"})


def speaker_of_actor(actor: str) -> Speaker:
    if actor in _PEOPLE:
        return Speaker.PERSON
    if actor in _AGENTS:
        return Speaker.AGENT
    return Speaker.NODE


def image_of(crystal: Crystal, review: str | None) -> Image:
    rejected = review == "rejected"
    return Image(
        speaker=crystal.speaker.value,
        text=crystal.text,
        semantic_type=crystal.semantic_type.value,
        scope=crystal.scope.value,
        pinned=crystal.lifespan is Lifespan.PERMANENT,
        forgotten=crystal.lifecycle is Lifecycle.EXPIRED and not rejected,
        superseded_by=crystal.superseded.by if crystal.superseded else "",
        review={"held": "held", "approved": "released", "released": "released", "rejected": "rejected"}.get(
            review or "", ""
        ),
    )


def details_of(crystal: Crystal) -> str:
    fields = {k: v for k, v in crystal_fields(crystal).items() if k not in _LOCAL_FIELDS}
    return json.dumps(fields, separators=(",", ":"), sort_keys=True)


async def review_of(db: aiosqlite.Connection, crystal_id: str) -> str | None:
    async with db.execute("SELECT status FROM quarantine WHERE crystal_id = ?", (crystal_id,)) as cursor:
        row = await cursor.fetchone()
    return str(row[0]) if row is not None else None


async def current_image(db: aiosqlite.Connection, crystal_id: str) -> tuple[Crystal, Image] | None:
    async with db.execute(f"SELECT {SELECT_COLUMNS} FROM crystals c WHERE c.id = ?", (crystal_id,)) as cursor:
        row = await cursor.fetchone()
    if row is None:
        return None
    crystal = crystal_from_row(row)
    return crystal, image_of(crystal, await review_of(db, crystal_id))


async def _last_actor(db: aiosqlite.Connection, crystal_id: str) -> tuple[str, str]:
    """Who made the latest change to a crystal, and the audit reason of its latest move."""
    async with db.execute(
        "SELECT actor, reason FROM ("
        " SELECT actor, reason, ts_ms, 1 AS k, seq FROM audit_log WHERE crystal_id = ?"
        " UNION ALL SELECT actor, '' AS reason, ts_ms, 0 AS k, seq FROM attributions WHERE crystal_id = ?"
        ") ORDER BY ts_ms DESC, k DESC, seq DESC LIMIT 1",
        (crystal_id, crystal_id),
    ) as cursor:
        row = await cursor.fetchone()
    return (str(row[0]), str(row[1])) if row is not None else ("", "")


@dataclass(frozen=True, slots=True)
class Written:
    operations: list[Operation]
    crystals: int  # marked crystals read


@dataclass(frozen=True, slots=True)
class Carried:
    """Which crystals travel to the person's other devices (``[devices]`` settings): private ones
    when the person allows it (pairing is the person's own act, so by default they do), secrets
    (confidential) only when the person says so."""

    private: bool = True
    confidential: bool = False
    vectors: bool = True  # this device's vectors travel with its crystals

    def carries(self, crystal: Crystal) -> bool:
        if crystal.sensitivity.value == "confidential" and not self.confidential:
            return False
        return self.private or crystal.scope.value != "private"


async def write_down(
    db: aiosqlite.Connection, device: str, clock: HybridClock, carried: Carried, *, limit: int = 500
) -> Written:
    """Turn up to ``limit`` marked crystals into this device's operations, in the caller's
    transaction (which must have secure_delete on: an erasure empties older operations). A crystal
    sync never carried and may not carry is left out; once carried, its changes travel."""
    async with db.execute("SELECT crystal_id FROM sync_dirty LIMIT ?", (limit,)) as cursor:
        marked = [str(r[0]) for r in await cursor.fetchall()]
    async with db.execute("SELECT coalesce(max(seq), 0) FROM sync_ops WHERE device = ?", (device,)) as cursor:
        seq = int((await cursor.fetchone() or (0,))[0])
    ops: list[Operation] = []
    for crystal_id in marked:
        async with db.execute("SELECT image FROM sync_image WHERE crystal_id = ?", (crystal_id,)) as cursor:
            row = await cursor.fetchone()
        before = loads(row[0]) if row is not None else None
        now = await current_image(db, crystal_id)
        if before is None and (now is None or not carried.carries(now[0])):
            continue
        actor, reason = await _last_actor(db, crystal_id)
        erased = now is None and reason.startswith("erased:") and not await _erased_already(db, crystal_id)
        for draft in drafts(before, now[1] if now else None, actor=speaker_of_actor(actor), erased=erased):
            seq += 1
            details = details_of(now[0]) if draft.change is Change.STORE and now else ""
            ops.append(
                Operation(
                    device,
                    seq,
                    clock.tick(),
                    draft.speaker,
                    draft.change,
                    crystal_id,
                    draft.text,
                    draft.semantic_type,
                    draft.scope,
                    draft.held,
                    draft.other,
                    details=details,
                )
            )
        if now is not None:
            now, said = await _vector_said(db, device, clock, carried, before, now, seq + 1)
            if said is not None:
                seq += 1
                ops.append(said)
        if now is None:
            await db.execute("DELETE FROM sync_image WHERE crystal_id = ?", (crystal_id,))
        else:
            await db.execute(
                "INSERT INTO sync_image (crystal_id, image) VALUES (?, ?) "
                "ON CONFLICT(crystal_id) DO UPDATE SET image = excluded.image",
                (crystal_id, now[1].dumps()),
            )
    await append_own(db, ops)
    for op in ops:
        if op.change is Change.ERASE:
            await empty_words(db, op.target)
    await db.executemany("DELETE FROM sync_dirty WHERE crystal_id = ?", [(c,) for c in marked])
    return Written(ops, len(marked))


async def _vector_said(
    db: aiosqlite.Connection,
    device: str,
    clock: HybridClock,
    carried: Carried,
    before: Image | None,
    now: tuple[Crystal, Image],
    seq: int,
) -> tuple[tuple[Crystal, Image], Operation | None]:
    """The crystal's vector as an operation of this device (numbered ``seq``), if this device
    embedded its words and no device has said that vector yet; and the image that records it."""
    crystal, image = now
    said = before.vector_model if before is not None else ""
    model = crystal.embedded_with or ""
    if not carried.vectors or not model or model == said:
        return (crystal, replace(image, vector_model=said)), None
    vector = await _vector_to_say(db, crystal, model)
    image = replace(image, vector_model=model)
    if vector is None:
        return (crystal, image), None
    op = Operation(
        device, seq, clock.tick(), Speaker.NODE, Change.VECTOR, crystal.id,
        details=crystal.content_hash, model=model, vector=vector,
    )  # fmt: skip
    return (crystal, image), op


async def _vector_to_say(db: aiosqlite.Connection, crystal: Crystal, model: str) -> bytes | None:
    """The crystal's vector in ``model``'s space, unless a device said it already for these words."""
    async with db.execute(
        "SELECT 1 FROM sync_ops WHERE target = ? AND change = 'vector' AND model = ? AND details = ? LIMIT 1",
        (crystal.id, model, crystal.content_hash),
    ) as cursor:
        if await cursor.fetchone() is not None:
            return None
    try:
        async with db.execute(
            f"SELECT v.embedding FROM {float_table_of(model)} v JOIN crystals c ON c.rowid = v.rowid WHERE c.id = ?",
            (crystal.id,),
        ) as cursor:
            row = await cursor.fetchone()
    except aiosqlite.OperationalError:  # no such space here (the embedder changed since)
        return None
    return bytes(row[0]) if row is not None else None


async def _erased_already(db: aiosqlite.Connection, crystal_id: str) -> bool:
    """An erasure that came from another device and was carried out here is not said again."""
    async with db.execute("SELECT 1 FROM sync_ops WHERE target = ? AND change = 'erase' LIMIT 1", (crystal_id,)) as c:
        return await c.fetchone() is not None


async def start_journal(db: aiosqlite.Connection) -> int:
    """Turn the journal on (a device joined a group): mark every crystal sync has not seen, so that
    what this device held before it joined is said too. Returns how many were marked."""
    await db.execute("INSERT OR IGNORE INTO sync_on (one) VALUES (1)")
    async with db.execute(
        "INSERT OR IGNORE INTO sync_dirty (crystal_id) "
        # what expired here (forgotten or decayed) before the device joined stays here
        "SELECT id FROM crystals WHERE lifecycle != 'expired' AND id NOT IN (SELECT crystal_id FROM sync_image)"
    ) as cursor:
        return max(cursor.rowcount, 0)


async def stop_journal(db: aiosqlite.Connection) -> None:
    """Turn the journal off (this device left its group or was removed): what it holds stays."""
    await db.execute("DELETE FROM sync_on")


__all__ = ["Carried", "Written", "crystal_any", "current_image", "start_journal", "stop_journal", "write_down"]
