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
from memory.storage.connection import select_in
from memory.storage.embedding import store_vectors
from memory.storage.row_writes import insert_indexed, write_transitions
from memory.storage.rows import RESTORE_SQL, restore_params
from memory.storage.vectors import VectorIndex
from memory.sync.bulk import crystals_of, forget_marks, images_of, reviews_of, save_images
from memory.sync.image import Image
from memory.sync.journal import image_of
from memory.sync.merge import CrystalState, fold
from memory.sync.operations import Change, Operation
from memory.sync.rows import keep, ops_about, replaced
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
    before = fold(await ops_about(db, targets | await replaced(db, targets)))
    kept = await keep(db, ops)
    done.kept, done.already, done.out_of_order = len(kept.new), kept.already, kept.out_of_order
    if not kept.new:
        return done
    touched = {op.target for op in kept.new}
    # a crystal replaced by one the batch touched follows it: current again once its replacement
    # is erased, replaced once the replacement's STORE arrives after the supersession
    around = await replaced(db, touched) - touched
    after_ops = await ops_about(db, touched | around)
    after = fold(after_ops)
    by_stamp = sorted(after_ops, key=lambda o: o.stamp, reverse=True)
    stores = {op.target: op for op in by_stamp if op.change is Change.STORE}  # the least stamp counts
    here = await crystals_of(db, touched)
    fresh: list[tuple[Crystal, CrystalState, Operation]] = []
    changed: list[tuple[CrystalState, CrystalState]] = []
    for target in sorted(around):
        old, new = before.crystals.get(target), after.crystals.get(target)
        if old is not None and new is not None and old != new and target in await crystals_of(db, [target]):
            changed.append((old, new))
            done.changed += 1
    for target in sorted(touched):
        if target in after.erased and target not in before.erased:
            done.to_erase.append(target)
            continue
        new = after.crystals.get(target)
        if new is None:
            continue
        if target in here:
            old = before.crystals.get(target)
            if old is not None and old != new:
                changed.append((old, new))
                done.changed += 1
            continue
        store_op = stores.get(target)
        if store_op is None:
            continue
        try:
            fresh.append((_crystal_of(store_op, new), new, store_op))
        except DamagedRecord:
            done.damaged += 1
    created = await _insert(db, fresh, now_ms, done)
    for crystal, new, store_op in created:
        changed.append((_as_stored(crystal.id, store_op), new))
    for old, new in changed:
        await _write_fields(db, old, new, now_ms)
    taken = await _take_vectors(db, space, kept.new) if space is not None else {}
    done.vectors = len(taken)
    await _keep_images(db, {new.id: (old, new) for old, new in changed}, {c.id for c, _, _ in created}, taken)
    return done


async def follow_erasures(db: aiosqlite.Connection, erasures: Sequence[Operation], now_ms: int) -> Applied:
    """This device's own erasures, just written down: what the crystals they replaced become (the
    merge makes a crystal replaced by an erased one current again), in the caller's transaction."""
    done = Applied()
    erased = {op.target for op in erasures}
    around = await replaced(db, erased) - erased
    if not around:
        return done
    said = await ops_about(db, around)
    before, after = fold(op for op in said if op not in erasures), fold(said)
    here = await crystals_of(db, around)
    changed = {
        t: (old, new)
        for t in sorted(around)
        if t in here and (old := before.crystals.get(t)) is not None and (new := after.crystals.get(t)) is not None
        and old != new
    }  # fmt: skip
    for old, new in changed.values():
        await _write_fields(db, old, new, now_ms)
    done.changed = len(changed)
    await _keep_images(db, changed, set(), {})
    return done


def _as_stored(crystal_id: str, store_op: Operation) -> CrystalState:
    """A crystal as its STORE alone says it is (what a new row holds before the rest is written)."""
    return CrystalState(
        crystal_id, store_op.speaker, store_op.text, store_op.semantic_type, store_op.scope, False, False, None,
        "held" if store_op.held else "", (),
    )  # fmt: skip


async def _insert(
    db: aiosqlite.Connection, fresh: list[tuple[Crystal, CrystalState, Operation]], now_ms: int, done: Applied
) -> list[tuple[Crystal, CrystalState, Operation]]:
    """New crystals in, but not words this device holds already under its own id."""
    if not fresh:
        return []
    hashes = [c.content_hash for c, _, _ in fresh]
    held = {
        str(r[0])
        for r in await select_in(db, "SELECT content_hash FROM crystals WHERE content_hash IN ({marks})", hashes)
    }
    kept: list[tuple[Crystal, CrystalState, Operation]] = []
    for item in fresh:
        if item[0].content_hash in held:
            done.duplicates += 1
        else:
            held.add(item[0].content_hash)
            kept.append(item)
    await insert_indexed(db, RESTORE_SQL, [restore_params(readmit(c)) for c, _, _ in kept])
    await db.executemany(
        "INSERT INTO audit_log (crystal_id, from_state, to_state, reason, actor, ts_ms) "
        "VALUES (?, NULL, ?, 'said on another of the person''s devices', ?, ?)",
        [(c.id, c.lifecycle.value, ACTOR, now_ms) for c, _, _ in kept],
    )
    await db.executemany(
        _HOLD_SQL, [(c.id, c.content_hash, c.source or "peer", now_ms) for c, _, op in kept if op.held]
    )
    done.created += len(kept)
    return kept


async def _take_vectors(db: aiosqlite.Connection, space: VectorIndex, ops: Sequence[Operation]) -> dict[str, str]:
    """Other devices' vectors of crystals' words, where they are of this device's embedder and the
    words are still the ones embedded: this device need not embed them. By crystal id, the model."""
    newest = {op.target: op for op in sorted(ops, key=lambda o: o.stamp) if op.change is Change.VECTOR}
    usable = {
        t: op
        for t, op in newest.items()
        if op.model == space.embedder_id and len(op.vector) == 4 * space.dim and not op.emptied
    }
    if not usable:
        return {}
    sql = "SELECT id, rowid, content_hash, embedded_with FROM crystals WHERE id IN ({marks})"
    rows = await select_in(db, sql, usable)
    embedded = [
        (int(rowid), str(cid), np.frombuffer(usable[cid].vector, dtype="<f4"))
        for cid, rowid, chash, model in rows
        if chash == usable[cid].details and model != space.embedder_id
    ]
    previous = {int(rowid): str(model) for _, rowid, _, model in rows if model is not None}
    await store_vectors(space.embedder_id, space, db, embedded, previous, owe=True)
    return {cid: space.embedder_id for _, cid, _ in embedded}


async def _keep_images(
    db: aiosqlite.Connection,
    written: dict[str, tuple[CrystalState, CrystalState]],
    created: set[str],
    vector_models: dict[str, str],
) -> None:
    """What sync knows of the crystals now: a new one as its row is; else the fields written here
    as the row has them and the rest as sync last knew them, so that a change this device made
    and has not said yet is still found (and said) by the journal; and which vector sync said or
    took. A crystal whose image is its row is no longer marked."""
    ids = set(written) | set(vector_models)
    if not ids:
        return
    rows = await crystals_of(db, ids)
    reviews = await reviews_of(db, rows)
    priors = await images_of(db, rows)
    images: dict[str, Image] = {}
    settled: list[str] = []
    for cid, crystal in rows.items():
        now = image_of(crystal, reviews.get(cid))
        prior = priors.get(cid)
        image = now if prior is None or cid in created else prior
        if prior is not None and cid in written and cid not in created:
            image = _after_writing(prior, now, *written[cid])
        kept = vector_models.get(cid, prior.vector_model if prior is not None else "")
        images[cid] = replace(image, vector_model=kept)
        if replace(image, vector_model="") == replace(now, vector_model=""):
            settled.append(cid)
    await save_images(db, images)
    await forget_marks(db, settled)


def _after_writing(prior: Image, now: Image, old: CrystalState, new: CrystalState) -> Image:
    """``prior`` with the fields the apply step wrote taken from the row (``now``)."""
    written: set[str] = set()
    if (new.text, new.speaker) != (old.text, old.speaker):
        written |= {"text", "speaker"}
    if new.semantic_type != old.semantic_type:
        written.add("semantic_type")
    if new.scope != old.scope:
        written.add("scope")
    if new.pinned != old.pinned:
        written.add("pinned")
    if (new.forgotten, new.review) != (old.forgotten, old.review):
        written |= {"forgotten", "review"}
    if new.superseded_by != old.superseded_by:
        written.add("superseded_by")
    return replace(prior, **{name: getattr(now, name) for name in written})


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
