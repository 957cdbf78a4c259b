"""``memory import`` of an export file: the crystals come back as they were exported.

Each crystal keeps its id, type, origin, times, lifecycle, counts and attribution history. One it
already holds (the same id or the same text) is not written twice. Its supersession, links and
derivations are restored once every crystal of the file is in: they may point forward in the file.
Each needs both of its ends in this store, and an end that was the same text under another id is
followed to that id. The vectors are not in the file: the importing node embeds with its own
embedder, and keyword search finds the crystals meanwhile. A damaged line is skipped and reported with
its number and why; every other line is restored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import aiosqlite

from memory.governance.injection import instruction_flags
from memory.governance.rules import classify_sensitivity
from memory.graph import Association, Attribution
from memory.model import Crystal, Sensitivity
from memory.storage.connection import select_in
from memory.storage.row_writes import insert_indexed
from memory.storage.rows import RESTORE_SQL, restore_params
from memory.storage.store import MemoryStore
from memory.transfer.records import (
    DamagedRecord,
    Derivation,
    NewerFormat,
    Record,
    check_header,
    is_header,
    looks_like_crystal,
    parse_record,
)

_BATCH = 500
MAX_REPORTED = 20  # damaged lines named one by one; the rest are counted


@dataclass(slots=True)
class Restored:
    created: int = 0
    duplicates: int = 0
    superseded: int = 0
    links: int = 0
    derivations: int = 0
    dangling: int = 0  # supersessions, links and derivations whose other end is in neither file nor store
    damaged: list[str] = field(default_factory=list)  # "line N: why", the first MAX_REPORTED
    damaged_count: int = 0


def is_export_file(path: Path) -> bool:
    """Whether ``path`` was written by ``memory export`` (any version): its first line says so."""
    if path.suffix.lower() != ".jsonl":
        return False
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip():
                try:
                    doc = json.loads(line)
                except ValueError:
                    return False
                return is_header(doc) or looks_like_crystal(doc)
    return False


async def restore_export(store: MemoryStore, path: Path, progress: Callable[[int], None] | None = None) -> Restored:
    """Restore every crystal, supersession, link and derivation of the export at ``path``."""
    done = Restored()
    ids: dict[str, str] = {}  # id in the file -> id in this store (differs for a text already held)
    pending: list[tuple[str, str, int]] = []  # (crystal, superseded by, at)
    links: list[Association] = []
    derivations: list[Derivation] = []
    batch: list[tuple[Crystal, tuple[Attribution, ...]]] = []
    for record in _records(path, done):
        if isinstance(record, Association):
            links.append(record)
        elif isinstance(record, Derivation):
            derivations.append(record)
        else:
            batch.append(record)
            if record[0].superseded is not None:
                pending.append((record[0].id, record[0].superseded.by, record[0].superseded.at_ms))
            if len(batch) == _BATCH:
                await _write(store, batch, ids, done, path)
                if progress:
                    progress(len(batch))
                batch = []
    await _write(store, batch, ids, done, path)
    if progress:
        progress(len(batch))
    await _connect(store, ids, pending, links, derivations, done)
    return done


def _records(path: Path, done: Restored) -> Iterator[Record]:
    """The file's records in order; a damaged line is counted in ``done`` and skipped. A file from a
    newer release is refused whole (``NewerFormat``): guessing at its fields could restore them wrong."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                if is_header(doc):
                    check_header(doc)
                    continue
                yield parse_record(doc)
            except NewerFormat:
                raise
            except DamagedRecord as exc:
                _damaged(done, number, str(exc))
            except ValueError:
                _damaged(done, number, "not JSON (a cut or edited line?)")


def _damaged(done: Restored, number: int, why: str) -> None:
    done.damaged_count += 1
    if len(done.damaged) < MAX_REPORTED:
        done.damaged.append(f"line {number}: {why}")


async def _write(
    store: MemoryStore,
    batch: list[tuple[Crystal, tuple[Attribution, ...]]],
    ids: dict[str, str],
    done: Restored,
    path: Path,
) -> None:
    if not batch:
        return
    db = store.reader()
    by_id = {
        r[0] for r in await select_in(db, "SELECT id FROM crystals WHERE id IN ({marks})", [c.id for c, _ in batch])
    }
    by_hash = dict(
        await select_in(
            db,
            "SELECT content_hash, id FROM crystals WHERE content_hash IN ({marks})",
            [c.content_hash for c, _ in batch],
        )
    )
    fresh: list[tuple[Crystal, tuple[Attribution, ...]]] = []
    for crystal, history in batch:
        known = crystal.id if crystal.id in by_id else by_hash.get(crystal.content_hash)
        if crystal.id in ids:  # the same id twice in the file: the first one stands
            done.duplicates += 1
        elif known is not None:
            ids[crystal.id] = known
            done.duplicates += 1
        else:
            by_hash[crystal.content_hash] = ids[crystal.id] = crystal.id  # a later line with this text is a copy
            fresh.append((crystal, history))
    if not fresh:
        return
    now = store.now_ms()
    async with store.transaction() as tx:
        # Supersession is set once both ends are in (``_connect``): the row goes in as current.
        await insert_indexed(tx, RESTORE_SQL, [restore_params(_as_restored(c)) for c, _ in fresh])
        await tx.executemany(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, ?, ?, ?)",
            [(c.id, a.actor, a.action, a.ts_ms, a.detail) for c, history in fresh for a in history]
            + [(c.id, "local", "imported", now, path.name[:200]) for c, _ in fresh],
        )
        await tx.executemany(
            "INSERT INTO audit_log (crystal_id, from_state, to_state, reason, actor, ts_ms) "
            "VALUES (?, NULL, ?, 'imported', 'local', ?)",
            [(c.id, c.lifecycle.value, now) for c, _ in fresh],
        )
        # Held when exported: held again, for the person to review here, with what its text reads like.
        await tx.executemany(
            "INSERT OR REPLACE INTO quarantine (crystal_id, content_hash, source, reason, flags, status, received_ms) "
            "VALUES (?, ?, ?, 'held when it was exported', ?, 'held', ?)",
            [
                (c.id, c.content_hash, c.source or "peer", json.dumps(list(instruction_flags(c.text))), now)
                for c, _ in fresh
                if c.quarantined
            ],
        )
    done.created += len(fresh)


_STRICTNESS = [Sensitivity.NORMAL, Sensitivity.PERSONAL, Sensitivity.CONFIDENTIAL]


def _as_restored(crystal: Crystal) -> Crystal:
    """The row as it goes in: current for now (``_connect`` sets its supersession once both ends are
    in), and never less private than this node's own rules call its text. The file's word is taken
    for everything else, but a secret the file calls "normal" would reach MEMORY.md and the remote
    endpoints, which confidential text never does."""
    ours = classify_sensitivity(crystal.text)
    stricter = max(crystal.sensitivity, ours, key=_STRICTNESS.index)
    return replace(crystal, superseded=None, sensitivity=stricter)


async def _connect(
    store: MemoryStore,
    ids: dict[str, str],
    pending: list[tuple[str, str, int]],
    links: list[Association],
    derivations: list[Derivation],
    done: Restored,
) -> None:
    """Supersession, links and derivations between crystals that are both here now."""
    ends = set(ids.values()) | {by for _, by, _ in pending} | {e for ln in links for e in (ln.src_id, ln.dst_id)}
    ends |= {e for d in derivations for e in (d.child, d.parent)}
    present = {
        r[0] for r in await select_in(store.reader(), "SELECT id FROM crystals WHERE id IN ({marks})", list(ends))
    }

    def here(cid: str) -> str | None:
        mapped = ids.get(cid, cid)
        return mapped if mapped in present else None

    supersede = [
        (by, at, old) for cid, by_id, at in pending if (old := here(cid)) and (by := here(by_id)) and by != old
    ]
    edges = [
        (src, dst, ln.type.value, ln.weight, ln.created_ms)
        for ln in links
        if (src := here(ln.src_id)) and (dst := here(ln.dst_id)) and src != dst
    ]
    parents = [
        (child, parent, d.relation) for d in derivations if (child := here(d.child)) and (parent := here(d.parent))
    ]
    done.dangling = len(pending) - len(supersede) + len(links) - len(edges) + len(derivations) - len(parents)
    async with store.transaction() as db:
        done.superseded = await _apply(
            db,
            "UPDATE crystals SET superseded_by = ?, superseded_ms = ? WHERE id = ? AND superseded_by IS NULL",
            supersede,
        )
        done.links = await _apply(
            db,
            "INSERT OR IGNORE INTO associations (src_id, dst_id, type, weight, created_ms) VALUES (?, ?, ?, ?, ?)",
            edges,
        )
        done.derivations = await _apply(
            db, "INSERT OR IGNORE INTO provenance (child_id, parent_id, relation) VALUES (?, ?, ?)", parents
        )


async def _present(store: MemoryStore, ids: list[str]) -> set[str]:
    """Which of ``ids`` this store holds."""
    return {r[0] for r in await select_in(store.reader(), "SELECT id FROM crystals WHERE id IN ({marks})", ids)}


async def _apply(db: aiosqlite.Connection, sql: str, rows: Sequence[tuple[object, ...]]) -> int:
    """Run ``sql`` for each row; how many rows it changed."""
    before = db.total_changes
    if rows:
        await db.executemany(sql, rows)
    return db.total_changes - before
