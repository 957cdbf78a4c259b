"""The daemon's continuous capture (``[capture] watch``): the loop that runs ``memory.capture.watch``
rounds every ``poll_s``, and what ``status``, ``/metrics`` and the dashboard show of it.

What a round set aside is counted here, never lost silently: damaged lines skipped (a total, and the
last few with their file and line), files that cannot be read (reported once until they change) and
links skipped (each named once in the log)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

from ground.events import get_logger
from memory.capture.llm_extract import LlmExtractor
from memory.capture.watch import WatchPlan, WatchRound, watch_round, watch_summary
from memory.capture.watch_settings import WatchSettings
from memory.errors import MemoryError_
from memory.intake.store import IntakeStore
from memory.storage.store import MemoryStore
from node.parts.metrics import NodeMetrics

log = get_logger("node.capture")
#: How many of the latest skipped lines ``status`` names (file and line); all are counted.
RECENT_SKIPPED = 5


class CaptureWatcher:
    """Runs the watch rounds and keeps their figures. ``on_stored`` is told how many crystals each
    round stored (the memory part's count and embedding backlog)."""

    def __init__(
        self,
        cfg: WatchSettings,
        extractor: LlmExtractor | None,
        metrics: NodeMetrics | None,
        on_stored: Callable[[int], None],
    ) -> None:
        self._cfg = cfg
        self.settings = WatchPlan.of(cfg, extractor)
        self._metrics = metrics
        self._on_stored = on_stored
        self._summary: dict[str, Any] | None = None
        self.skipped_lines = 0
        self.recent_skipped: deque[dict[str, Any]] = deque(maxlen=RECENT_SKIPPED)
        self._links_named: set[tuple[str, str]] = set()

    def details(self) -> dict[str, Any] | None:
        """For ``status``: files followed, messages read, files in error, lines skipped (None before
        the first round)."""
        if self._summary is None:
            return None
        return {**self._summary, "skipped_lines": self.skipped_lines, "recent_skipped": list(self.recent_skipped)}

    def summary(self) -> str | None:
        """``status``'s line: 'capturing 12 transcripts (3,400 messages, 1 unreadable, 2 damaged lines skipped)'."""
        if self._summary is None:
            return None
        notes = [f"{self._summary['messages']} messages"]
        if self._summary["errors"]:
            notes.append(f"{len(self._summary['errors'])} unreadable")
        if self.skipped_lines:
            last = self.recent_skipped[-1]
            notes.append(f"{self.skipped_lines} damaged lines skipped, last {last['file']}:{last['line']}")
        return f"capturing {self._summary['files']} transcripts ({', '.join(notes)})"

    async def run(self, store_of: Callable[[], IntakeStore | None]) -> None:
        """Capture what is written in the watched folders, every ``poll_s``, while a store is open."""
        while (store := store_of()) is not None:
            try:
                done = await watch_round(store, self.settings)
            except (OSError, MemoryError_) as exc:  # a folder gone, a disk full: say so, try again
                log.warning("memory.capture_watch_failed", error=repr(exc))
            else:
                await self._record(store, done)
            await asyncio.sleep(self._cfg.poll_s)

    async def _record(self, store: MemoryStore, done: WatchRound) -> None:
        for path, why in done.new_errors:  # each once, until the file changes
            log.warning("memory.capture_unreadable", file=path, error=why)
        for path, why in done.skipped_links:
            if (path, why) not in self._links_named:  # each once: a round runs every few seconds
                self._links_named.add((path, why))
                log.warning("memory.capture_link_skipped", file=path, why=why)
        for path, line in done.skipped_lines:  # each damaged line is met once: the watermark passes it
            self.recent_skipped.append({"file": path, "line": line})
        self.skipped_lines += len(done.skipped_lines)
        if self._metrics is not None and done.skipped_lines:
            self._metrics.capture_lines_skipped.inc(len(done.skipped_lines))
        if done.new_messages:
            log.info("memory.captured", messages=done.new_messages, crystals=done.stored)
        self._on_stored(done.stored)
        if done.files_read or done.forgotten or self._summary is None:  # only then do the watermarks change
            summary = await watch_summary(store)
            self._summary = {**summary, "folders": [str(f) for f in self.settings.folders]}
