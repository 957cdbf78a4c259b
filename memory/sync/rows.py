"""Operations as rows of ``sync_ops``, and what a device holds of each author (its version vector).

Each author's operations are kept as a run from 1 with no gap: one past the run is refused (the
sender sends each author's in order, so a cut batch is only cut short). An author shown to say two
things under one number is refused: the first stands. Operations about an erased crystal keep
their place with their words taken out, and SQLite's secure_delete zeroes the pages they were on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite

from ground.authority import Speaker, may
from memory.errors import SyncRefused
from memory.storage.connection import select_in
from memory.sync.clock import Stamp
from memory.sync.operations import NEEDS, Change, Operation

_COLUMNS = (
    "device, seq, wall_ms, counter, stamp_device, speaker, change, target, text, semantic_type, scope, held, other, "
    "emptied, details, model, vector"
)
_INSERT = f"INSERT INTO sync_ops ({_COLUMNS}) VALUES ({', '.join('?' * 17)})"


def op_row(op: Operation) -> tuple[Any, ...]:
    s = op.stamp
    return (
        op.device, op.seq, s.wall_ms, s.counter, s.device, op.speaker.value, op.change.value, op.target, op.text,
        op.semantic_type, op.scope, int(op.held), op.other, int(op.emptied), op.details, op.model, op.vector or None,
    )  # fmt: skip


def op_from_row(row: Sequence[Any]) -> Operation:
    (device, seq, wall, counter, stamp_device, speaker, change, target, text, stype, scope, held, other, emptied,
     details, model, vector) = row  # fmt: skip
    return Operation(
        device, int(seq), Stamp(int(wall), int(counter), stamp_device), Speaker(speaker), Change(change), target,
        text, stype, scope, bool(held), other, bool(emptied), details, model, bytes(vector or b""),
    )  # fmt: skip


async def vector(db: aiosqlite.Connection) -> dict[str, int]:
    """The highest number held of each author (its run from 1: nothing past a gap is kept)."""
    async with db.execute("SELECT device, max(seq) FROM sync_ops GROUP BY device") as cursor:
        return {device: int(seq) for device, seq in await cursor.fetchall()}


def counted_erasures(rows: Iterable[Sequence[Any]]) -> set[str]:
    """The targets of (target, speaker) erasures whose speaker may erase (the merge counts only those)."""
    return {str(t) for t, speaker in rows if may(Speaker(speaker), NEEDS[Change.ERASE])}


async def erased_targets(db: aiosqlite.Connection, targets: Iterable[str]) -> set[str]:
    sql = "SELECT target, speaker FROM sync_ops WHERE change = 'erase' AND target IN ({marks})"
    return counted_erasures(await select_in(db, sql, targets))


async def ops_about(db: aiosqlite.Connection, targets: Iterable[str]) -> list[Operation]:
    """Every operation about ``targets``, and the STOREs and erasures of the crystals their
    supersessions name (the merge asks whose words replace whose, and a crystal replaced by an
    erased one is current again)."""
    ids = set(targets)
    sql = f"SELECT {_COLUMNS} FROM sync_ops WHERE target IN ({{marks}})"
    out = [op_from_row(row) for row in await select_in(db, sql, ids)]
    others = {op.other for op in out if op.change is Change.SUPERSEDE and op.other not in ids}
    sql = f"SELECT {_COLUMNS} FROM sync_ops WHERE change IN ('store', 'erase') AND target IN ({{marks}})"
    return out + [op_from_row(row) for row in await select_in(db, sql, others)]


async def replaced(db: aiosqlite.Connection, by: Iterable[str]) -> set[str]:
    """The crystals a supersession says one of ``by`` replaces: what the merge makes of them follows
    the replacing crystal too (its STORE arriving after the supersession, its erasure)."""
    sql = "SELECT DISTINCT target FROM sync_ops WHERE change = 'supersede' AND other IN ({marks})"
    return {str(r[0]) for r in await select_in(db, sql, by)}


async def all_ops(db: aiosqlite.Connection) -> list[Operation]:
    async with db.execute(f"SELECT {_COLUMNS} FROM sync_ops") as cursor:
        return [op_from_row(row) for row in await cursor.fetchall()]


async def missing_from(db: aiosqlite.Connection, theirs: Mapping[str, int], limit: int) -> list[Operation]:
    """Up to ``limit`` operations a device with vector ``theirs`` lacks, each author's in order,
    oldest authors' first so that a batch cut short still leaves every run without a gap."""
    out: list[Operation] = []
    for device, held in sorted((await vector(db)).items()):
        have = theirs.get(device, 0)
        if have >= held:
            continue
        async with db.execute(
            f"SELECT {_COLUMNS} FROM sync_ops WHERE device = ? AND seq > ? ORDER BY seq LIMIT ?",
            (device, have, limit - len(out)),
        ) as cursor:
            out += [op_from_row(row) for row in await cursor.fetchall()]
        if len(out) >= limit:
            break
    return out


@dataclass(frozen=True, slots=True)
class Kept:
    new: list[Operation]  # taken now, in the order given
    already: int
    out_of_order: int  # past a gap in their author's run: not kept, sent again later


async def keep(db: aiosqlite.Connection, ops: Sequence[Operation]) -> Kept:
    """Add operations from another device, in the caller's transaction (``SyncRefused`` if one
    contradicts what its author said before under that number)."""
    runs = await vector(db)
    erased = await erased_targets(db, (op.target for op in ops))
    new: list[Operation] = []
    already = out_of_order = 0
    for op in ops:
        if op.seq <= runs.get(op.device, 0):
            async with db.execute(
                f"SELECT {_COLUMNS} FROM sync_ops WHERE device = ? AND seq = ?", (op.device, op.seq)
            ) as cursor:
                row = await cursor.fetchone()
            held = op_from_row(row) if row is not None else None
            if held is not None and held.emptied_of_words() != op.emptied_of_words():
                raise SyncRefused(f"device {op.device} said two things as its change {op.seq}")
            already += 1
            continue
        if op.seq != runs.get(op.device, 0) + 1:
            out_of_order += 1
            continue
        if op.change is Change.ERASE and may(op.speaker, NEEDS[Change.ERASE]):
            erased.add(op.target)
        kept = op.emptied_of_words() if op.target in erased else op
        runs[op.device] = op.seq
        new.append(kept)
    await db.executemany(_INSERT, [op_row(op) for op in new])
    for target in {op.target for op in new if op.change is Change.ERASE} & erased:
        await empty_words(db, target)
    return Kept(new, already, out_of_order)


async def append_own(db: aiosqlite.Connection, ops: Sequence[Operation]) -> None:
    await db.executemany(_INSERT, [op_row(op) for op in ops])


async def empty_words(db: aiosqlite.Connection, target: str) -> None:
    """Take the words out of every operation about an erased crystal (the caller's transaction
    has secure_delete on, so the pages they were on are zeroed)."""
    await db.execute(
        "UPDATE sync_ops SET text = '', details = '', vector = NULL, emptied = 1 "
        "WHERE target = ? AND (text != '' OR details != '' OR vector IS NOT NULL)",
        (target,),
    )
