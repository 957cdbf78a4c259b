"""The SQL that writes and finds crystal rows inside a transaction the store holds: inserting a
batch with its full-text, audit, attribution, provenance and quarantine rows; lifecycle moves
with their audit rows; lookups by id and content hash. Plain functions over a connection."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import aiosqlite

from ground.authority import STANDING, Speaker
from memory.epistemic import layer_for
from memory.errors import CrystalNotFound
from memory.model import Crystal, Lifecycle, Lifespan, NewCrystal, content_hash, speaker_of
from memory.storage.connection import select_in
from memory.storage.rows import INSERT_SQL, SELECT_COLUMNS, crystal_from_row
from memory.storage.vectors import VectorIndex


def _allowed() -> dict[Lifecycle, frozenset[Lifecycle]]:
    G, A, C, R, E, F = (
        Lifecycle.GENERATED,
        Lifecycle.ACTIVATED,
        Lifecycle.CONSOLIDATED,
        Lifecycle.ARCHIVED,
        Lifecycle.EXPIRED,
        Lifecycle.FROZEN,
    )
    return {
        G: frozenset({A, C, R, E, F}),
        A: frozenset({C, R, E, F}),
        C: frozenset({A, R, E, F}),
        R: frozenset({G, A, C, E}),  # unmerge restores an archived crystal to its state before
        E: frozenset({G}),  # remembered again after being forgotten
        F: frozenset({A, R, E}),  # unfrozen, or explicitly archived/forgotten
    }


#: Which lifecycle transitions are allowed. Every one the store makes is written to the audit log
#: (``write_transitions``).
ALLOWED = _allowed()


def can_transition(current: Lifecycle, target: Lifecycle) -> bool:
    """Whether the lifecycle lets a crystal go from ``current`` to ``target``."""
    return target in ALLOWED[current]


async def insert_rows(
    db: aiosqlite.Connection, params: list[tuple[Any, ...]], rows: list[tuple[str, NewCrystal]], now: int
) -> None:
    """Insert prepared rows with their audit, attribution and provenance rows."""
    if not rows:
        return
    last_rowid = await insert_indexed(db, INSERT_SQL, params)
    actors = {new.actor for _, new in rows}
    if len(actors) == 1:
        # One actor (a bulk import, a single remember): the audit and attribution rows are written
        # from the rows just inserted, in one statement each instead of one bound row per crystal.
        shared = {"actor": actors.pop(), "now": now, "after": last_rowid}
        await db.execute(
            "INSERT INTO audit_log (crystal_id, from_state, to_state, reason, actor, ts_ms) "
            "SELECT id, NULL, 'generated', 'created', :actor, :now FROM crystals WHERE rowid > :after ORDER BY rowid",
            shared,
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) "
            "SELECT id, :actor, 'created', :now, origin FROM crystals WHERE rowid > :after ORDER BY rowid",
            shared,
        )
    else:
        await db.executemany(
            "INSERT INTO audit_log (crystal_id, from_state, to_state, reason, actor, ts_ms) "
            "VALUES (?, NULL, 'generated', 'created', ?, ?)",
            [(cid, new.actor, now) for cid, new in rows],
        )
        await db.executemany(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'created', ?, ?)",
            [(cid, new.actor, now, new.origin.value) for cid, new in rows],
        )
    await hold_in_quarantine(
        db, [(cid, content_hash(new.text), new) for cid, new in rows if new.quarantine is not None], now
    )
    links = [(cid, parent, "derived_from") for cid, new in rows for parent in new.parents]
    if links:
        await db.executemany("INSERT OR IGNORE INTO provenance (child_id, parent_id, relation) VALUES (?, ?, ?)", links)


async def insert_indexed(db: aiosqlite.Connection, sql: str, params: Sequence[tuple[Any, ...]]) -> int:
    """Insert crystal rows with ``sql`` and index their text for keyword search; returns the highest
    rowid before them (every row past it is this batch: rowids are AUTOINCREMENT and the caller holds
    the write lock)."""
    async with db.execute("SELECT coalesce(max(rowid), 0) FROM crystals") as cursor:
        last_rowid = int((await cursor.fetchone() or (0,))[0])
    await db.executemany(sql, params)
    await db.execute(
        "INSERT INTO crystals_fts (rowid, text, tags, context) "
        "SELECT rowid, text, tags, coalesce(context, '') FROM crystals WHERE rowid > ?",
        (last_rowid,),
    )
    return last_rowid


async def hold_in_quarantine(db: aiosqlite.Connection, items: list[tuple[str, str, NewCrystal]], now: int) -> None:
    """Record why each (crystal id, content hash, new crystal) is held in quarantine."""
    rows = [
        (cid, chash, new.source or new.actor, new.quarantine.reason, json.dumps(list(new.quarantine.flags)), now)
        for cid, chash, new in items
        if new.quarantine is not None
    ]
    if rows:
        await db.executemany(
            "INSERT OR REPLACE INTO quarantine (crystal_id, content_hash, source, reason, flags, status, received_ms) "
            "VALUES (?, ?, ?, ?, ?, 'held', ?)",
            rows,
        )


async def write_transitions(
    db: aiosqlite.Connection, moves: Sequence[tuple[str, Lifecycle, Lifecycle, str]], actor: str, now: int
) -> None:
    """Move each (crystal id, from, to, reason) and write its audit row, inside the caller's transaction."""
    await db.executemany(
        "UPDATE crystals SET lifecycle = ?, updated_at_ms = ? WHERE id = ?",
        [(new.value, now, cid) for cid, _, new, _ in moves],
    )
    await db.executemany(
        "INSERT INTO audit_log (crystal_id, from_state, to_state, reason, actor, ts_ms) VALUES (?, ?, ?, ?, ?, ?)",
        [(cid, old.value, new.value, reason, actor, now) for cid, old, new, reason in moves],
    )


async def rowid_of(db: aiosqlite.Connection, crystal_id: str) -> int:
    async with db.execute("SELECT rowid FROM crystals WHERE id = ?", (crystal_id,)) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise CrystalNotFound(crystal_id)
    return int(row[0])


async def crystal_any(db: aiosqlite.Connection, crystal_id: str) -> Crystal:
    async with db.execute(f"SELECT {SELECT_COLUMNS} FROM crystals c WHERE c.id = ?", (crystal_id,)) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise CrystalNotFound(crystal_id)
    return crystal_from_row(row)


async def crystal_by_hash(db: aiosqlite.Connection, chash: str) -> Crystal | None:
    async with db.execute(f"SELECT {SELECT_COLUMNS} FROM crystals c WHERE c.content_hash = ?", (chash,)) as cursor:
        row = await cursor.fetchone()
    return crystal_from_row(row) if row else None


async def ids_by_hash(db: aiosqlite.Connection, hashes: list[str]) -> dict[str, str]:
    rows = await select_in(db, "SELECT content_hash, id FROM crystals WHERE content_hash IN ({marks})", hashes)
    return {r[0]: r[1] for r in rows}


async def speakers_by_hash(db: aiosqlite.Connection, hashes: list[str]) -> dict[str, Speaker]:
    """The speaker of each live (not forgotten) crystal with one of ``hashes``."""
    rows = await select_in(
        db,
        "SELECT content_hash, speaker FROM crystals WHERE lifecycle != 'expired' AND content_hash IN ({marks})",
        hashes,
    )
    return {r[0]: Speaker(r[1]) for r in rows}


async def delete_rows(db: aiosqlite.Connection, vectors: VectorIndex, rows: Sequence[tuple[int, str]]) -> None:
    """Delete (rowid, id) crystals with their vectors, links, replay entries, merge records and held
    quarantine rows. The audit log, attributions and a rejected text's quarantine record stay: they
    record that the crystal existed, and what was decided."""
    ids = [(cid,) for _, cid in rows]
    await vectors.delete(db, [rowid for rowid, _ in rows])
    await db.executemany("DELETE FROM associations WHERE src_id = ?", ids)
    await db.executemany("DELETE FROM associations WHERE dst_id = ?", ids)
    await db.executemany("DELETE FROM replay_queue WHERE crystal_id = ?", ids)
    await db.executemany("DELETE FROM merges WHERE loser_id = ? OR winner_id = ?", [(i, i) for (i,) in ids])
    await db.executemany("DELETE FROM quarantine WHERE crystal_id = ? AND status = 'held'", ids)
    await db.executemany("DELETE FROM after_embedding_owed WHERE rowid = ?", [(rowid,) for rowid, _ in rows])
    await db.executemany("DELETE FROM crystals WHERE rowid = ?", [(rowid,) for rowid, _ in rows])


def outranks(new: Speaker, old: Speaker) -> bool:
    """Whether words said again by ``new`` become ``new``'s: it stands higher than ``old``."""
    return STANDING[new] > STANDING[old]


async def said_again(db: aiosqlite.Connection, crystal: Crystal, new: NewCrystal, now: int, *, revived: bool) -> None:
    """The store keeps one crystal per text; this is what saying a stored text again does to it.

    Without it, whoever said a text first kept it: the agent (or a page it quoted) could store the
    person's words before the person said them, so the person's statement stayed the agent's, never
    a directive, and the agent's to forget; and a forgotten crystal said again came back with the
    speaker and layer it had, so the agent could bring back a directive the person had forgotten.
    Now the text takes the speaker of whoever says it again when that speaker stands higher, and
    always when it comes back from forgotten, with the layer that speaker's words get; the
    attribution chain keeps who said it first. A pin (``new``'s permanent lifespan, which only a
    directing speaker can state) of the same speaker's words is kept. What is held in quarantine
    stays held: the person releases it (``memory quarantine approve``)."""
    speaker = speaker_of(new)
    takes = revived or outranks(speaker, crystal.speaker)
    owner = speaker if takes else crystal.speaker
    pinned = new.lifespan is Lifespan.PERMANENT and owner is speaker and not revived
    if not (takes or pinned):
        return
    origin = new.origin if takes else crystal.origin
    layer = layer_for(crystal.text, crystal.semantic_type, origin, owner)
    await db.execute(
        "UPDATE crystals SET speaker = ?, origin = ?, epistemic_layer = ?, updated_at_ms = ? WHERE id = ?",
        (owner.value, origin.value, layer.value, now, crystal.id),
    )
    if pinned:
        await db.execute(
            "UPDATE crystals SET lifespan = ?, expires_at_ms = NULL WHERE id = ?",
            (Lifespan.PERMANENT.value, crystal.id),
        )
    if owner is not crystal.speaker:
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'adopted', ?, ?)",
            (crystal.id, new.actor, now, f"said by {crystal.speaker.value}, said again by {owner.value}"),
        )


async def said_again_in_batch(
    db: aiosqlite.Connection, known: dict[str, str], items: Sequence[tuple[str, NewCrystal]], now: int
) -> None:
    """A batch's texts stored before it (``known``: content hash -> id), said again: each taken on by
    its new speaker when that speaker stands higher (``said_again``)."""
    here = await speakers_by_hash(db, [chash for chash, _ in items if chash in known])
    for chash, new in items:
        if chash in here and outranks(speaker_of(new), here[chash]):
            await said_again(db, await crystal_any(db, known[chash]), new, now, revived=False)
            here[chash] = speaker_of(new)


async def revive(db: aiosqlite.Connection, old: Crystal, new: NewCrystal, now: int) -> None:
    """Bring back forgotten ``old``, its text said again as ``new``: with ``new``'s lifespan, hold and
    speaker (never the speaker and layer it had: the agent brought back the person's forgotten
    directive by saying its words), inside the caller's transaction."""
    expires = now + new.ttl_ms if new.ttl_ms is not None else None
    await db.execute(
        "UPDATE crystals SET expires_at_ms = ?, lifespan = ?, updated_at_ms = ?, quarantined = ? WHERE id = ?",
        (expires, new.lifespan.value, now, int(new.quarantine is not None), old.id),
    )
    if new.quarantine is not None:
        await hold_in_quarantine(db, [(old.id, old.content_hash, new)], now)
    await said_again(db, old, new, now, revived=True)
    await write_transitions(db, [(old.id, Lifecycle.EXPIRED, Lifecycle.GENERATED, "remembered again")], new.actor, now)
