"""Counting accesses off the search's latency path: a search records which crystals it returned,
a background flusher writes the counts shortly after, and closing writes whatever is left.

Counts are never dropped: a flush that fails keeps them pending for the next one."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from memory.errors import StoreError

_log = logging.getLogger("memory.store")


class AccessCounter:
    def __init__(self, write: Callable[[Counter[str]], Awaitable[None]]) -> None:
        self._write = write
        self._pending: Counter[str] = Counter()
        self._wakeup = asyncio.Event()
        self._closing = False
        self._flusher = asyncio.create_task(self._flush_loop(), name="memory-access-flush")

    def record(self, crystal_ids: Sequence[str]) -> None:
        """Count an access of each crystal, written shortly after by the flusher (or at close)."""
        self._pending.update(crystal_ids)
        self._wakeup.set()

    async def flush(self) -> None:
        """Write every recorded access now."""
        pending, self._pending = self._pending, Counter()
        if not pending:
            return
        try:
            await self._write(pending)
        except BaseException:
            self._pending.update(pending)  # kept for the next flush, never dropped
            raise

    async def close(self) -> None:
        """Let the flusher finish what it is writing (cancelling it mid-transaction would lose those
        counts), then write whatever was recorded after it stopped."""
        self._closing = True
        self._wakeup.set()
        await self._flusher
        await self.flush()

    async def _flush_loop(self) -> None:
        while not self._closing:
            await self._wakeup.wait()
            self._wakeup.clear()
            try:
                await self.flush()
            except StoreError as exc:
                # Counts stay pending; the next access or close() tries again.
                _log.warning("memory.access_flush_failed", extra={"fields": {"error": str(exc)}})
