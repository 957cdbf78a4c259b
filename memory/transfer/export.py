"""``memory export``: every live crystal, then the links and derivations between the crystals written,
as the JSONL ``memory.transfer.records`` describes, signed by the node (``memory.transfer.signature``)
so that restoring it here gives each crystal back the authority it was recorded with."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from memory.graph.provenance import Association, Attribution
from memory.model import AssociationType, Crystal, Sensitivity
from memory.storage.connection import select_in
from memory.storage.store import MemoryStore
from memory.transfer.records import (
    Derivation,
    crystal_record,
    derivation_record,
    header,
    link_record,
)
from memory.transfer.signature import Signer, SigningHash

_BATCH = 500


@dataclass(frozen=True, slots=True)
class Exported:
    crystals: int
    skipped_confidential: int
    links: int
    derivations: int
    signed: bool


async def export_memory(
    store: MemoryStore, sink: TextIO, *, include_confidential: bool = False, signer: Signer | None = None
) -> Exported:
    """Write the header, each live crystal (archived ones too: they carry provenance), then every link
    and derivation whose two ends were written, then ``signer``'s signature over all of it (none
    without a signer: the file then restores as a stranger's). ``sink`` must write UTF-8 as given
    (no newline translation): the signature is over those bytes. Confidential crystals only when asked."""
    signing = SigningHash()

    def write(doc: object) -> None:
        line = json.dumps(doc, ensure_ascii=False) + "\n"
        signing.update(line.encode("utf-8"))
        sink.write(line)

    write(header(store.now_ms(), signer.public_key if signer is not None else None))
    written: set[str] = set()
    skipped = 0
    batch: list[Crystal] = []
    async for crystal in store.iter_live(batch=_BATCH):
        if crystal.sensitivity is Sensitivity.CONFIDENTIAL and not include_confidential:
            skipped += 1
            continue
        batch.append(crystal)
        if len(batch) == _BATCH:
            await _write_crystals(store, batch, write)
            written.update(c.id for c in batch)
            batch = []
    await _write_crystals(store, batch, write)
    written.update(c.id for c in batch)
    links = derivations = 0
    async with store.reader().execute("SELECT src_id, dst_id, type, weight, created_ms FROM associations") as cursor:
        async for src, dst, kind, weight, created in cursor:
            if src in written and dst in written:
                write(link_record(Association(src, dst, AssociationType(kind), float(weight), int(created))))
                links += 1
    async with store.reader().execute("SELECT child_id, parent_id, relation FROM provenance") as cursor:
        async for child, parent, relation in cursor:
            if child in written and parent in written:
                write(derivation_record(Derivation(child, parent, relation)))
                derivations += 1
    if signer is not None:
        sink.write(json.dumps(signing.signature_line(signer)) + "\n")
    return Exported(len(written), skipped, links, derivations, signer is not None)


async def _write_crystals(store: MemoryStore, batch: list[Crystal], write: Callable[[object], None]) -> None:
    if not batch:
        return
    rows = await select_in(
        store.reader(),
        "SELECT crystal_id, actor, action, ts_ms, detail FROM attributions WHERE crystal_id IN ({marks}) ORDER BY seq",
        [c.id for c in batch],
    )
    history: dict[str, list[Attribution]] = {}
    for cid, actor, action, ts, detail in rows:
        history.setdefault(cid, []).append(Attribution(actor, action, ts, detail))
    for crystal in batch:
        write(crystal_record(crystal, history.get(crystal.id, [])))
