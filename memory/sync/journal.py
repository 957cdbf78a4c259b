"""The journal: what changed in this device's memory, said as operations of its own.

The triggers of ``memory.sync.schema`` mark every crystal whose row changed; ``write_down`` reads
each marked row as an image, compares it with the image sync last took, and appends the
operations between them (``memory.sync.image.drafts``) under this device's next numbers and
clock. It runs in one transaction, so a kill leaves the marks to be read again, never half an
operation. Who said each change comes from the row (the words' speaker) or its audit trail.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

import aiosqlite

from ground.authority import Speaker
from memory.model import Crystal, Lifecycle, Lifespan, Scope, Sensitivity
from memory.storage.connection import select_in
from memory.storage.vectors import float_table_of
from memory.sync.bulk import crystals_of, forget_marks, images_of, reviews_of, save_images
from memory.sync.clock import HybridClock
from memory.sync.image import Image, drafts
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


#: The attribution each change of a crystal's standing leaves (``memory.cognition.retype``,
#: ``memory.governance.scope``, ``memory.supersession.detect``), by the change it is said as.
_ATTRIBUTED = {"retyped": Change.RETYPE, "scope": Change.SCOPE, "superseded": Change.SUPERSEDE,
               "unsuperseded": Change.UNSUPERSEDE}  # fmt: skip


async def _actors(db: aiosqlite.Connection, crystal_id: str) -> dict[Change, Speaker]:
    """Who made the latest change of each kind the store records apart: a crystal's latest actor
    alone misnames a change made in the same millisecond as another (a held crystal superseded as
    it arrived was said by the peer)."""
    found: dict[Change, str] = {}
    async with db.execute(
        "SELECT action, actor FROM attributions WHERE crystal_id = ? ORDER BY seq", (crystal_id,)
    ) as cursor:
        for action, actor in await cursor.fetchall():
            if action in _ATTRIBUTED:
                found[_ATTRIBUTED[action]] = str(actor)
    async with db.execute(
        "SELECT from_state, to_state, actor FROM audit_log WHERE crystal_id = ? ORDER BY seq", (crystal_id,)
    ) as cursor:
        for from_state, to_state, actor in await cursor.fetchall():
            if to_state == Lifecycle.EXPIRED.value and from_state != Lifecycle.EXPIRED.value:
                found[Change.FORGET] = str(actor)
            elif from_state == Lifecycle.EXPIRED.value and to_state != Lifecycle.EXPIRED.value:
                found[Change.RESTORE] = str(actor)
    async with db.execute("SELECT decided_by FROM quarantine WHERE crystal_id = ?", (crystal_id,)) as cursor:
        decided = await cursor.fetchone()
    if decided is not None and decided[0] is not None:
        found[Change.RELEASE] = found[Change.REJECT] = str(decided[0])
    return {change: speaker_of_actor(actor) for change, actor in found.items()}


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
        if crystal.sensitivity is Sensitivity.CONFIDENTIAL and not self.confidential:
            return False
        return self.private or crystal.scope is not Scope.PRIVATE


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
    befores = await images_of(db, marked)
    rows = await crystals_of(db, marked)
    reviews = await reviews_of(db, rows)
    vectors = await _vectors_to_say(db, [c for c in rows.values() if carried.vectors and c.embedded_with], befores)
    ops: list[Operation] = []
    images: dict[str, Image] = {}
    gone: list[str] = []
    for crystal_id in marked:
        before = befores.get(crystal_id)
        crystal = rows.get(crystal_id)
        if before is None and (crystal is None or not carried.carries(crystal)):
            continue
        after = image_of(crystal, reviews.get(crystal_id)) if crystal is not None else None
        actor, erased, by = Speaker.NODE, False, {}
        if before is not None or crystal is None or _decided(after):
            who, reason = await _last_actor(db, crystal_id)
            actor = speaker_of_actor(who)
            erased = crystal is None and reason.startswith("erased:") and not await _erased_already(db, crystal_id)
            by = await _actors(db, crystal_id) if crystal is not None else {}
        for draft in drafts(before, after, actor=actor, erased=erased, by=by):
            seq += 1
            details = details_of(crystal) if draft.change is Change.STORE and crystal is not None else ""
            ops.append(
                Operation(
                    device, seq, clock.tick(), draft.speaker, draft.change, crystal_id, draft.text,
                    draft.semantic_type, draft.scope, draft.held, draft.other, details=details,
                )
            )  # fmt: skip
        if crystal is None or after is None:
            gone.append(crystal_id)
            continue
        said = before.vector_model if before is not None else ""
        model = crystal.embedded_with or ""
        if carried.vectors and model and model != said:
            vector = vectors.get(crystal_id)
            if vector is not None:
                seq += 1
                ops.append(
                    Operation(
                        device, seq, clock.tick(), Speaker.NODE, Change.VECTOR, crystal_id,
                        details=crystal.content_hash, model=model, vector=vector,
                    )
                )  # fmt: skip
            said = model
        images[crystal_id] = replace(after, vector_model=said)
    await save_images(db, images)
    await db.executemany("DELETE FROM sync_image WHERE crystal_id = ?", [(c,) for c in gone])
    await append_own(db, ops)
    for op in ops:
        if op.change is Change.ERASE:
            await empty_words(db, op.target)
    await forget_marks(db, marked)
    return Written(ops, len(marked))


def _decided(image: Image | None) -> bool:
    """Whether a crystal new to sync carries changes someone made (whose speaker the audit names)."""
    return image is not None and (
        image.forgotten or bool(image.superseded_by) or image.review in ("released", "rejected")
    )


async def _vectors_to_say(
    db: aiosqlite.Connection, crystals: list[Crystal], befores: Mapping[str, Image]
) -> dict[str, bytes]:
    """The vectors of crystals this device embedded whose vector sync has not said: by crystal id,
    unless some device said that vector of these words already."""
    wanted = [
        c for c in crystals if c.embedded_with and c.embedded_with != getattr(befores.get(c.id), "vector_model", "")
    ]
    if not wanted:
        return {}
    said = {
        (str(r[0]), str(r[1]), str(r[2]))
        for r in await select_in(
            db, "SELECT target, model, details FROM sync_ops WHERE change = 'vector' AND target IN ({marks})",
            [c.id for c in wanted],
        )
    }  # fmt: skip
    out: dict[str, bytes] = {}
    for model in {c.embedded_with for c in wanted if c.embedded_with}:
        ids = [c.id for c in wanted if c.embedded_with == model and (c.id, model, c.content_hash) not in said]
        try:
            rows = await select_in(
                db, f"SELECT c.id, v.embedding FROM {float_table_of(model)} v JOIN crystals c ON c.rowid = v.rowid "
                "WHERE c.id IN ({marks})", ids,
            )  # fmt: skip
        except aiosqlite.OperationalError:  # no such space here (the embedder changed since)
            continue
        out.update({str(r[0]): bytes(r[1]) for r in rows})
    return out


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
