"""This device's memory as one replica of the person's group: the journal written down, what it
holds (version vector and state digest), what another device lacks, and other devices' operations
taken in. The exchange (``memory.sync.exchange``) calls it; it knows nothing of the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

import aiosqlite

from ground import failpoints
from memory.errors import CrystalNotFound, SyncRefused
from memory.governance.erase import erase
from memory.storage.store import MemoryStore
from memory.sync.apply import ACTOR, Applied, apply_batch, follow_erasures
from memory.sync.clock import HybridClock, Stamp
from memory.sync.journal import Carried, start_journal, stop_journal, write_down
from memory.sync.merge import fold
from memory.sync.operations import Change, Operation
from memory.sync.rows import all_ops, counted_erasures, missing_from, vector

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Held:
    vector: dict[str, int]
    digest: str


class Replica:
    def __init__(self, store: MemoryStore, device: str, carried: Carried | None = None) -> None:
        self.store = store
        self.device = device
        self.carried = carried or Carried()
        self.clock = HybridClock(device, store.now_ms)
        self._digest: tuple[tuple[tuple[str, int], ...], str] | None = None
        self._lock = asyncio.Lock()  # one journal pass or batch at a time (each is one transaction)

    async def open(self) -> None:
        """Continue this device's clock after its last own stamp, and finish the erasures a kill cut
        off: another device's erasure is kept with the batch that brought it, and carried out just
        after (``take``); a kill between the two left the crystal here, which nothing would erase."""
        async with self.store.reader().execute(
            "SELECT wall_ms, counter FROM sync_ops WHERE device = ? ORDER BY seq DESC LIMIT 1", (self.device,)
        ) as cursor:
            row = await cursor.fetchone()
        if row is not None:
            self.clock.resume(Stamp(int(row[0]), int(row[1]), self.device))
        left = await self._erasures_left()
        async with self._lock:
            await self._erase_here(left)

    async def _erasures_left(self) -> list[str]:
        async with self.store.reader().execute(
            "SELECT DISTINCT o.target, o.speaker FROM sync_ops o JOIN crystals c ON c.id = o.target "
            "WHERE o.change = 'erase'"
        ) as cursor:
            rows = await cursor.fetchall()
        return sorted(counted_erasures(rows))

    async def _erase_here(self, crystal_ids: Sequence[str]) -> None:
        """Erase crystals another device erased, and forget their journal marks (said already)."""
        for crystal_id in crystal_ids:
            with contextlib.suppress(CrystalNotFound):  # never here (a duplicate, or not carried)
                await erase(self.store, crystal_id, actor=ACTOR, reason="erased on another device")
        if crystal_ids:
            async with self._sync_transaction() as db:
                await db.executemany("DELETE FROM sync_dirty WHERE crystal_id = ?", [(c,) for c in crystal_ids])
                await db.executemany("DELETE FROM sync_image WHERE crystal_id = ?", [(c,) for c in crystal_ids])

    @contextlib.asynccontextmanager
    async def _sync_transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        # Erasures empty older operations in place: the pages their words were on are zeroed.
        async with self.store.transaction() as db:
            await db.execute("PRAGMA secure_delete = ON")
            try:
                yield db
            finally:
                await db.execute("PRAGMA secure_delete = OFF")

    async def start(self) -> int:
        """Journal from now on, and mark what this device held before it joined."""
        async with self.store.transaction() as db:
            return await start_journal(db)

    async def stop(self) -> None:
        async with self.store.transaction() as db:
            await stop_journal(db)

    async def pending(self) -> int:
        async with self.store.reader().execute("SELECT count(*) FROM sync_dirty") as cursor:
            return int((await cursor.fetchone() or (0,))[0])

    async def write_down(self, *, batch: int = 500) -> list[Operation]:
        """Every change marked since the last pass, as this device's operations."""
        if not await self.pending():  # the loop asks 4 times a second: no write lock for nothing
            return []
        async with self._lock:
            out = await self._write_down(batch)
        if any(op.change is Change.ERASE for op in out):
            await self.store.checkpoint(truncate=True)
        return out

    async def _write_down(self, batch: int) -> list[Operation]:
        out: list[Operation] = []
        while True:
            async with self._sync_transaction() as db:
                written = await write_down(db, self.device, self.clock, self.carried, limit=batch)
                erasures = [op for op in written.operations if op.change is Change.ERASE]
                if erasures:
                    await follow_erasures(db, erasures, self.store.now_ms())
            out += written.operations
            if written.crystals < batch:
                return out

    async def vector(self) -> dict[str, int]:
        """What this device holds of each author (cheap: one indexed query)."""
        return await vector(self.store.reader())

    async def digest(self, vec: Mapping[str, int]) -> str:
        """The state digest at ``vec`` (this device's current vector). It folds every operation, so it
        is computed when a comparison needs it and kept until the vector moves."""
        key = tuple(sorted(vec.items()))
        if self._digest is None or self._digest[0] != key:
            ops = await all_ops(self.store.reader())
            self._digest = (key, fold(ops).digest())
        return self._digest[1]

    async def held(self) -> Held:
        vec = await self.vector()
        return Held(vec, await self.digest(vec))

    async def missing_for(self, theirs: Mapping[str, int], limit: int) -> list[Operation]:
        return await missing_from(self.store.reader(), theirs, limit)

    async def take(self, ops: Sequence[Operation]) -> Applied:
        """Other devices' operations, carried out here. An operation stamped too far ahead of this
        device's clock is not taken, nor anything after it from its author (taken later, when the
        clocks agree); the rest is."""
        late: set[str] = set()
        taken: list[Operation] = []
        for op in ops:
            if op.device in late or op.device == self.device:
                continue
            try:
                self.clock.seen(op.stamp)
            except SyncRefused:
                late.add(op.device)
                _log.warning("memory.sync.stamp_ahead", extra={"fields": {"device": op.device, "seq": op.seq}})
                continue
            taken.append(op)
        async with self._lock:
            # this device's changes first, said before the batch's are written over them
            own = await self._write_down(500) if await self.pending() else []
            async with self._sync_transaction() as db:
                done = await apply_batch(db, taken, self.store.now_ms(), self.store.vectors)
            failpoints.check("sync:before-erasing")  # the batch kept, its erasures not yet carried out
            await self._erase_here(done.to_erase)
            if done.to_erase or any(op.change is Change.ERASE for op in own):
                await self.store.checkpoint(truncate=True)
        return done
