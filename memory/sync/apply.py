"""Carrying out other devices' operations on this device's rows.

For each crystal a batch touches, the merge (``memory.sync.merge.fold``) is asked what the crystal
was before the batch and what it is after; only what changed between the two is written. So a
change that is this device's own alone (decay, consolidation, a type the node refined) stays
until another device says something about that same field. The image is taken again after the
writes, so the journal does not say them back. Erasures are carried out by
``memory.governance.erase`` after the transaction (they zero pages and fold the WAL).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import aiosqlite
import numpy as np

from memory.intake.admit import readmit
from memory.model import Crystal, Lifecycle, Lifespan, content_hash
from memory.storage.embedding import store_vectors
from memory.storage.row_writes import insert_indexed, write_transitions
from memory.storage.rows import RESTORE_SQL, restore_params
from memory.storage.vectors import VectorIndex
from memory.sync.image import loads
from memory.sync.journal import current_image
from memory.sync.merge import CrystalState, fold
from memory.sync.operations import Change, Operation
from memory.sync.rows import keep, ops_about
from memory.transfer.records import DamagedRecord, parse_record

_HOLD_SQL = (
    "INSERT OR REPLACE INTO quarantine (crystal_id, content_hash, source, reason, flags, status, received_ms) "
    "VALUES (?, ?, ?, 'held on another of the person''s devices', '[]', 'held', ?)"
)

#: The name in the audit trail of a change another device made.
ACTOR = "sync"


@dataclass(slots=True)
class Applied:
    kept: int = 0
    already: int = 0
    out_of_order: int = 0
    created: int = 0
    changed: int = 0
    to_erase: list[str] = field(default_factory=list)
    duplicates: int = 0  # a crystal whose words this device held already under its own id
    damaged: int = 0  # a STORE whose crystal could not be read: kept, not shown
    vectors: int = 0  # vectors taken from the device that embedded them


def _crystal_of(store_op: Operation, state: CrystalState) -> Crystal:
    doc: dict[str, Any] = json.loads(store_op.details) if store_op.details else {}
    doc |= {"kind": "crystal", "id": state.id, "text": store_op.text, "access_count": 0, "dream_count": 0}
    doc |= {"superseded": None, "quarantined": store_op.held, "embedded_with": None}
    if doc.get("lifecycle") in ("expired", "archived"):
        doc["lifecycle"] = "generated"
    record = parse_record(doc)
    if not isinstance(record, tuple):
        raise DamagedRecord("a STORE's details are not a crystal")
    return record[0]


async def apply_batch(
    db: aiosqlite.Connection, ops: Sequence[Operation], now_ms: int, space: VectorIndex | None = None
) -> Applied:
    """Keep ``ops`` and carry out what they change, in the caller's transaction (secure_delete on);
    ``space``: this device's vector space, which takes the vectors other devices embedded."""
    done = Applied()
    targets = {op.target for op in ops}
    before = fold(await ops_about(db, targets))
    kept = await keep(db, ops)
    done.kept, done.already, done.out_of_order = len(kept.new), kept.already, kept.out_of_order
    if not kept.new:
        return done
    touched = {op.target for op in kept.new}
    after_ops = await ops_about(db, touched)
    after = fold(after_ops)
    stores = {
        op.target: op for op in sorted(after_ops, key=lambda o: o.stamp, reverse=True) if op.change.value == "store"
    }
    for target in touched:
        if target in after.erased and target not in before.erased:
            done.to_erase.append(target)
            continue
        new = after.crystals.get(target)
        if new is None:
            continue
        await _project(db, before.crystals.get(target), new, stores.get(target), now_ms, done)
    if space is not None:
        newest = {op.target: op for op in sorted(kept.new, key=lambda o: o.stamp) if op.change is Change.VECTOR}
        for op in newest.values():
            done.vectors += await _take_vector(db, space, op)
    return done


async def _take_vector(db: aiosqlite.Connection, space: VectorIndex, op: Operation) -> int:
    """Another device's vector of a crystal's words, if it is of this device's embedder and the
    words are still the ones it embedded: this device need not embed them."""
    if op.model != space.embedder_id or len(op.vector) != 4 * space.dim or op.emptied:
        return 0
    async with db.execute(
        "SELECT rowid, embedded_with FROM crystals WHERE id = ? AND content_hash = ?", (op.target, op.details)
    ) as cursor:
        row = await cursor.fetchone()
    if row is None or row[1] == op.model:
        return 0
    rowid = int(row[0])
    previous = {rowid: str(row[1])} if row[1] is not None else {}
    vector = np.frombuffer(op.vector, dtype="<f4")
    await store_vectors(op.model, space, db, [(rowid, op.target, vector)], previous, owe=True)
    await _keep_image(db, op.target, vector_model=op.model)
    await db.execute("DELETE FROM sync_dirty WHERE crystal_id = ?", (op.target,))
    return 1


async def _keep_image(db: aiosqlite.Connection, crystal_id: str, *, vector_model: str | None = None) -> None:
    """Take the crystal's image again from its row (what was written is not said back), keeping
    which vector sync said or took unless ``vector_model`` names a new one."""
    now = await current_image(db, crystal_id)
    if now is None:
        return
    async with db.execute("SELECT image FROM sync_image WHERE crystal_id = ?", (crystal_id,)) as cursor:
        row = await cursor.fetchone()
    kept = vector_model if vector_model is not None else (loads(row[0]).vector_model if row is not None else "")
    await db.execute(
        "INSERT INTO sync_image (crystal_id, image) VALUES (?, ?) "
        "ON CONFLICT(crystal_id) DO UPDATE SET image = excluded.image",
        (crystal_id, replace(now[1], vector_model=kept).dumps()),
    )


async def _project(
    db: aiosqlite.Connection,
    old: CrystalState | None,
    new: CrystalState,
    store_op: Operation | None,
    now_ms: int,
    done: Applied,
) -> None:
    held = await current_image(db, new.id)
    if held is None:
        if store_op is None:
            return
        try:
            crystal = _crystal_of(store_op, new)
        except DamagedRecord:
            done.damaged += 1
            return
        async with db.execute("SELECT 1 FROM crystals WHERE content_hash = ?", (crystal.content_hash,)) as c:
            if await c.fetchone() is not None:
                done.duplicates += 1
                return
        await insert_indexed(db, RESTORE_SQL, [restore_params(readmit(crystal))])
        await db.execute(
            "INSERT INTO audit_log (crystal_id, from_state, to_state, reason, actor, ts_ms) "
            "VALUES (?, NULL, ?, 'said on another of the person''s devices', ?, ?)",
            (crystal.id, crystal.lifecycle.value, ACTOR, now_ms),
        )
        if store_op.held:
            await db.execute(
                _HOLD_SQL,
                (crystal.id, crystal.content_hash, crystal.source or "peer", now_ms),
            )
        done.created += 1
        old = CrystalState(
            new.id, store_op.speaker, store_op.text, store_op.semantic_type, store_op.scope, False, False, None,
            "held" if store_op.held else "", (),
        )  # fmt: skip
    else:
        done.changed += 1
    assert old is not None
    await _write_fields(db, old, new, now_ms)
    await _keep_image(db, new.id)
    await db.execute("DELETE FROM sync_dirty WHERE crystal_id = ?", (new.id,))


async def _write_fields(db: aiosqlite.Connection, old: CrystalState, new: CrystalState, now: int) -> None:
    cid = new.id
    if new.text != old.text:
        text_hash = content_hash(new.text)
        async with db.execute("SELECT 1 FROM crystals WHERE content_hash = ? AND id != ?", (text_hash, cid)) as c:
            clash = await c.fetchone() is not None
        if not clash:  # the same words held here under another id: the old words stay on this one
            await db.execute(
                "UPDATE crystals SET text = ?, content_hash = ?, text_bytes = ?, embedded_with = NULL, "
                "updated_at_ms = ? WHERE id = ?",
                (new.text, text_hash, len(new.text.encode()), now, cid),
            )
    if new.speaker != old.speaker:
        await db.execute("UPDATE crystals SET speaker = ? WHERE id = ?", (new.speaker.value, cid))
    if new.semantic_type != old.semantic_type:
        await db.execute(
            "UPDATE crystals SET semantic_type = ?, type_source = 'correction', updated_at_ms = ? WHERE id = ?",
            (new.semantic_type, now, cid),
        )
    if new.scope != old.scope:
        await db.execute("UPDATE crystals SET scope = ?, updated_at_ms = ? WHERE id = ?", (new.scope, now, cid))
    if new.pinned != old.pinned:
        lifespan = Lifespan.PERMANENT if new.pinned else Lifespan.DECAY
        await db.execute(
            "UPDATE crystals SET lifespan = ?, expires_at_ms = NULL, updated_at_ms = ? WHERE id = ?",
            (lifespan.value, now, cid),
        )
    if new.forgotten != old.forgotten:
        async with db.execute("SELECT lifecycle FROM crystals WHERE id = ?", (cid,)) as c:
            row = await c.fetchone()
        if row is not None:
            current = Lifecycle(row[0])
            target = Lifecycle.EXPIRED if new.forgotten else Lifecycle.GENERATED
            why = "forgotten on another device" if new.forgotten else "restored on another device"
            await write_transitions(db, [(cid, current, target, why)], ACTOR, now)
    if new.superseded_by != old.superseded_by:
        await db.execute(
            "UPDATE crystals SET superseded_by = ?, superseded_ms = CASE WHEN ? IS NULL THEN NULL ELSE "
            "coalesce((SELECT created_at_ms FROM crystals WHERE id = ?), ?) END WHERE id = ?",
            (new.superseded_by, new.superseded_by, new.superseded_by, now, cid),
        )
    if new.review != old.review and new.review in ("released", "rejected"):
        status = "approved" if new.review == "released" else "rejected"
        await db.execute(
            "UPDATE quarantine SET status = ?, decided_ms = ?, decided_by = ? WHERE crystal_id = ?",
            (status, now, ACTOR, cid),
        )
        if new.review == "released":
            await db.execute("UPDATE crystals SET quarantined = 0 WHERE id = ?", (cid,))
        elif not new.forgotten:
            async with db.execute("SELECT lifecycle FROM crystals WHERE id = ?", (cid,)) as c:
                row = await c.fetchone()
            if row is not None and row[0] != Lifecycle.EXPIRED.value:
                await write_transitions(db, [(cid, Lifecycle(row[0]), Lifecycle.EXPIRED, "rejected")], ACTOR, now)
