"""``memory import`` of an export file: this node's own export comes back as it was; any other as text.

The file's signature decides (``memory.transfer.signature``), before anything of it is written.
Signed by a trusted key (this node's own; paired devices will add theirs), each crystal keeps its
id, type, origin, speaker, layer, lifespan, times, lifecycle, quarantine flag, counts and attribution
history, and its supersession, links and derivations are restored once every crystal of the file is
in: they may point forward in the file. Each needs both of its ends in this store, and an end that
was the same text under another id is followed to that id.

Any other file (unsigned, an older format, another node's, altered, cut short) is a stranger's
(``Road.FOREIGN_EXPORT``): its crystals come in as imported text with a file's authority
(``memory.transfer.demote``), under new ids; its supersessions, links and derivations are kept
only between crystals it created here now, never touching one that was here before (a run cut off
and run again still knows which those are: ``memory.transfer.foreign_ids``). ``Restored`` says how
many were taken so, and why.

Either way a crystal already held (the same id or the same text) is not written twice. The vectors
are not in the file: the importing node embeds with its own embedder, and keyword search finds the
crystals meanwhile. A damaged line is skipped and reported with its number and why; every other
line is restored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import aiosqlite

from ground import failpoints, json_text
from memory.governance.injection import instruction_flags
from memory.graph.provenance import Association, Attribution
from memory.intake.admit import readmit
from memory.intake.store import IntakeStore
from memory.model import Crystal
from memory.safe_files import MAX_LINE_BYTES, bounded_lines, open_regular
from memory.storage.connection import select_in
from memory.storage.row_writes import insert_indexed
from memory.storage.rows import RESTORE_SQL, restore_params
from memory.storage.store import MemoryStore
from memory.transfer import foreign_ids
from memory.transfer.demote import store_demoted
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
from memory.transfer.signature import Vouched, check_file, is_signature

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
    vouched: Vouched = Vouched.UNSIGNED  # what the file's signature check found
    # Crystal records taken as imported text, without the authority they claimed (0 when trusted).
    demoted: int = 0
    # Supersessions, links and derivations of an unvouched-for file naming a crystal that was here
    # before: not applied.
    refused: int = 0

    @property
    def trusted(self) -> bool:
        return self.vouched is Vouched.TRUSTED

    def summary(self) -> str | None:
        """One line for the person when the file was not taken at its word; None when it was."""
        if self.trusted:
            return None
        return (
            f"{self.demoted} memories came in as imported text, without the authority the file claims "
            f"(not a directive, not pinned, not the person's words): the file is {self.vouched.value}"
            + (f"; {self.refused} supersessions and links to memories already here were not applied" if self.refused
               else "")
        )  # fmt: skip


def is_export_file(path: Path) -> bool:
    """Whether ``path`` was written by ``memory export`` (any version): its first line says so."""
    if path.suffix.lower() != ".jsonl":
        return False
    with open_regular(path) as handle:
        for _, line in bounded_lines(handle, tail=True):
            if line is None:  # a line over the cap is no line an export writes
                return False
            if line.strip():
                try:
                    doc = json_text.loads(line)
                except ValueError:
                    return False
                return is_header(doc) or looks_like_crystal(doc)
    return False


async def restore_export(
    store: IntakeStore,
    path: Path,
    progress: Callable[[int], None] | None = None,
    *,
    trusted: frozenset[bytes],
    max_line: int = MAX_LINE_BYTES,
) -> Restored:
    """Restore every crystal, supersession, link and derivation of the export at ``path``: as they
    were when one of the ``trusted`` public keys signed the file, as imported text otherwise."""
    done = Restored()
    ids: dict[str, str] = {}  # id in the file -> id in this store (differs for a text already held)
    fresh: set[str] | None = None  # untrusted: the crystals this file created (its edges stay among them)
    pending: list[tuple[str, str, int]] = []  # (crystal, superseded by, at)
    links: list[Association] = []
    derivations: list[Derivation] = []
    batch: list[tuple[Crystal, tuple[Attribution, ...]]] = []
    # One handle for the check and the restore: what is restored is the file that was checked.
    with open_regular(path) as handle:  # a regular file: a FIFO or a link swapped in is refused
        done.vouched = check_file(handle, trusted, max_line).vouched
        source = None
        if not done.trusted:
            fresh, source = set(), foreign_ids.source_key(handle)

        async def write() -> None:
            if fresh is None or source is None:
                await _write(store, batch, ids, done, path)
            else:
                await _write_demoted(store, batch, ids, (fresh, source), done, path)
            if progress:
                progress(len(batch))
            # Each batch commits on its own: a restore stopped here (a crash, kill -9) is resumed by
            # running it again, which finds what is in by id and text and writes nothing twice.
            failpoints.check("restore:after-batch")

        for record in _records(handle, done, max_line):
            if isinstance(record, Association):
                links.append(record)
            elif isinstance(record, Derivation):
                derivations.append(record)
            else:
                batch.append(record)
                if record[0].superseded is not None:
                    pending.append((record[0].id, record[0].superseded.by, record[0].superseded.at_ms))
                if len(batch) == _BATCH:
                    await write()
                    batch = []
        await write()
    await _connect(store, ids, fresh, pending, links, derivations, done)
    if source is not None:
        await foreign_ids.forget(store, source)
    return done


async def _write_demoted(
    store: IntakeStore,
    batch: list[tuple[Crystal, tuple[Attribution, ...]]],
    ids: dict[str, str],
    created: tuple[set[str], str],
    done: Restored,
    path: Path,
) -> None:
    """An unvouched-for file's crystals, as imported text (``memory.transfer.demote``); ``created``:
    the crystals this file created here, and the file's key (``foreign_ids``)."""
    fresh, source = created
    kept: list[Crystal] = []
    seen = set(ids)
    for crystal, _ in batch:
        if crystal.id in seen:  # the same id twice in the file: the first one stands
            done.duplicates += 1
        else:
            seen.add(crystal.id)
            kept.append(crystal)
    earlier = await foreign_ids.recall(store, source, kept)  # stored by a run of this file that was cut off
    for file_id, (cid, created_here) in earlier.items():
        ids[file_id] = cid
        if created_here:
            fresh.add(cid)
    done.duplicates += len(earlier)
    done.demoted += len(earlier)
    kept = [c for c in kept if c.id not in earlier]
    await foreign_ids.intend(store, source, kept)
    stored = await store_demoted(store, kept, path)
    for crystal, cid in zip(kept, stored.ids, strict=True):
        ids[crystal.id] = cid
    fresh.update(stored.fresh)
    done.created += len(stored.fresh)
    done.duplicates += len(kept) - len(stored.fresh)
    done.demoted += len(kept)


def _records(handle: BinaryIO, done: Restored, max_line: int) -> Iterator[Record]:
    """The file's records in order; a damaged line, or one over ``max_line`` bytes (read past, never
    held), is counted in ``done`` and skipped. A file from a newer release is refused whole
    (``NewerFormat``): guessing at its fields could restore them wrong."""
    for number, (length, raw) in enumerate(bounded_lines(handle, max_line, tail=True), start=1):
        if raw is None:
            _damaged(done, number, f"a line of {length:,} bytes, over the {max_line:,} a line may hold")
            continue
        line = raw.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            doc = json_text.loads(line)
            if is_header(doc):
                check_header(doc)
                continue
            if is_signature(doc):  # checked before the first record was read
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
        await insert_indexed(tx, RESTORE_SQL, [restore_params(readmit(c)) for c, _ in fresh])
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


async def _connect(
    store: MemoryStore,
    ids: dict[str, str],
    fresh: set[str] | None,
    pending: list[tuple[str, str, int]],
    links: list[Association],
    derivations: list[Derivation],
    done: Restored,
) -> None:
    """Supersession, links and derivations between crystals that are both here now; for an
    unvouched-for file (``fresh`` given), only between crystals it created: a stranger's file never
    hides, links or derives from what was here before it."""
    ends = set(ids.values()) | {by for _, by, _ in pending} | {e for ln in links for e in (ln.src_id, ln.dst_id)}
    ends |= {e for d in derivations for e in (d.child, d.parent)}
    present = {
        r[0] for r in await select_in(store.reader(), "SELECT id FROM crystals WHERE id IN ({marks})", list(ends))
    }

    def here(cid: str) -> str | None:
        if fresh is not None:
            return mapped if (mapped := ids.get(cid)) in fresh else None
        mapped = ids.get(cid, cid)
        return mapped if mapped in present else None

    def named(cid: str) -> bool:  # an end this store holds, that an unvouched-for file may not touch
        return fresh is not None and here(cid) is None and (ids.get(cid) in present or cid in present)

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
    ends_named = [(cid, by) for cid, by, _ in pending] + [(ln.src_id, ln.dst_id) for ln in links]
    ends_named += [(d.child, d.parent) for d in derivations]
    done.refused = sum(1 for a, b in ends_named if named(a) or named(b))
    unapplied = len(pending) - len(supersede) + len(links) - len(edges) + len(derivations) - len(parents)
    done.dangling = unapplied - done.refused
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
