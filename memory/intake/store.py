"""The store as its writers see it: every new crystal goes through the intake before a row is written.

``remember`` and ``remember_many`` decide what the persistence below them (``MemoryStore``) only
writes: the semantic type and layer (the typer, with the authority table), the sensitivity, the
hormonal stamp (``hormone_source``), curiosity's score and the gaps a crystal fills (``curiosity``).
A text stored already is only said again (``Restated``), untyped, as before."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Self, TypedDict, Unpack

from ground.clock import Clock
from memory.cognition.bulk_typing import WORKER_MIN_ITEMS, BulkTyping
from memory.cognition.typer import Typer, load_corrections
from memory.embedders.base import Embedder, crystal_vectors
from memory.intake.admit import admit, admit_batch, restated
from memory.model import Lifecycle, NewCrystal, content_hash
from memory.storage.migrations import SchemaSet
from memory.storage.row_writes import crystal_any, crystal_by_hash
from memory.storage.store import BULK_BATCH, EmbeddedHook, MemoryStore
from memory.storage.store_types import BulkResult, LinkSettings, Progress, Remembered


class OpenOptions(TypedDict, total=False):
    """``MemoryStore.open``'s keywords, which ``IntakeStore.open`` hands on."""

    now_ms: Clock
    links: LinkSettings | None
    on_embedded: EmbeddedHook | None
    readers: int
    schemas: Sequence[SchemaSet]


class IntakeStore(MemoryStore):
    """Open with ``await IntakeStore.open(path, embedder)`` (``MemoryStore.open``'s options); always
    ``await store.close()``."""

    #: Types what its callers left untyped, and learns from ``memory retype``.
    typer: Typer

    @classmethod
    async def open(cls, path: Path, embedder: Embedder, **options: Unpack[OpenOptions]) -> Self:
        """``MemoryStore.open``, with the typer that learned the person's stored corrections."""
        store = await super().open(path, embedder, **options)
        store.typer = Typer(await load_corrections(store.reader()))
        return store

    async def remember(self, new: NewCrystal, *, embed: bool = True) -> Remembered:
        """Admit and store one crystal (or return the stored one with the same text), embedded and linked."""
        chash = content_hash(new.text)
        existing = await crystal_by_hash(self.reader(), chash)
        if existing is not None and existing.lifecycle is not Lifecycle.EXPIRED:
            again = await self.restate(restated(new, chash))
            if again is not None:
                return Remembered(again, created=False)
        new = await self.typer.complete_async(new)
        if self.hormone_source is not None:
            new = await self.hormone_source.on_ingest(new)
        # Held content is not embedded until it is approved: it costs a stranger's sender no
        # embedding time of ours, and it cannot crowd the vector index or link itself to memories.
        embed = embed and new.quarantine is None
        vector = await asyncio.to_thread(crystal_vectors, self.embedder, [(new.text, new.context)]) if embed else None
        if self.curiosity is not None:
            new = await self.curiosity.assess(new, vector[0] if vector is not None else None)
        crystal_id, created = await self.write(admit(new, chash), vector)
        if not created:
            return Remembered(await crystal_any(self.reader(), crystal_id), created=False)
        if self.curiosity is not None and new.quarantine is None:
            await self.curiosity.on_stored([(crystal_id, new.text)])
        return Remembered(await self.get(crystal_id), created=True)

    async def remember_many(
        self, items: Sequence[NewCrystal], *, batch_size: int = BULK_BATCH, progress: Progress | None = None
    ) -> BulkResult:
        """Admit and store many crystals in batched transactions, without embedding (``embed_backlog``
        does that).

        Each batch commits on its own: after a crash, every committed batch is kept
        and a re-run skips it by content hash.
        """
        batches = [items[start : start + batch_size] for start in range(0, len(items), batch_size)]
        if len(batches) == 1:
            return await self._write_batches(batches, None, progress)
        async with self.bulk_writes():
            if len(items) >= WORKER_MIN_ITEMS:
                async with BulkTyping(self.typer) as typing:
                    return await self._write_batches(batches, typing, progress)
            return await self._write_batches(batches, None, progress)

    async def _write_batches(
        self, batches: Sequence[Sequence[NewCrystal]], typing: BulkTyping | None, progress: Progress | None
    ) -> BulkResult:
        ids: list[str] = []
        created = 0
        for index, batch in enumerate(batches):
            # The worker types batch n + 1 while this process writes batch n (the first batch is
            # typed here, while the worker starts).
            answer = await typing.answer() if typing is not None and index > 0 else None
            if typing is not None and index + 1 < len(batches):
                typing.start(batches[index + 1])
            influences = self.hormone_source.influences(batch) if self.hormone_source is not None else None
            if answer is None:
                hashes = [content_hash(n.text) for n in batch]
                rows = admit_batch(batch, hashes, self.typer.decide_many(batch), influences)
            else:
                typings = self.typer.decide_batch(batch, answer.typed)
                rows = admit_batch(batch, answer.hashes, typings, influences, answer.sensitivities)
            batch_ids, batch_created = await self.write_many(rows)
            if self.curiosity is not None:  # a bulk import closes the gaps it fills (no boost: see curiosity)
                await self.curiosity.on_stored([(i, n.text) for i, n in zip(batch_ids, batch, strict=True)])
            created += batch_created
            ids.extend(batch_ids)
            if progress:
                progress(len(batch))
        if created:
            await self.checkpoint()
        return BulkResult(created=created, duplicates=sum(map(len, batches)) - created, ids=tuple(ids))
