"""Typing a large import in a worker process, a batch ahead of the store's writes.

Typing is Python work (about 40 µs a statement) and so is most of a write's preparation; in one
process they take turns on the GIL, and a thread gains nothing (tried: the write slowed as much as
the preparation sped up). A bulk import of at least ``WORKER_MIN_ITEMS`` crystals therefore has a
second process classify batch n + 1 while this one writes batch n (measured at 100K synthetic
crystals: see the README). The worker also hashes each text and classifies its sensitivity, the rest
of the batch's pure Python work, so an import its caller typed uses it too.

The worker is ``python -m memory.cognition.typing_worker``, spoken to over its stdin and stdout in
JSON lines: not ``multiprocessing``, whose "spawn" re-runs the parent's main module (the CLI) and
whose "fork" would copy the node's threads mid-step. It fits the same model from the same examples
and corrections, so it decides exactly as ``Typer`` does; a correction made while an import runs
reaches that import only by its exact text, which the store checks itself.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from memory.cognition.typer import Typer
from memory.model import NewCrystal, Sensitivity

#: Below this many crystals, starting the worker (about a second) costs more than it saves.
WORKER_MIN_ITEMS = 20_000
#: The longest line either side writes: a batch of texts of at most 100,000 characters each.
_LINE_LIMIT = 1 << 30


_log = logging.getLogger("memory.bulk_typing")


@dataclass(frozen=True, slots=True)
class WorkerAnswer:
    hashes: list[str]
    sensitivities: list[Sensitivity]
    typed: list[Any]  # per item: [type, confidence, source], or None for one its caller typed


class BulkTyping:
    """``async with BulkTyping(typer) as typing:`` then, per batch, ``typing.start(batch)`` (returns at
    once) and later ``await typing.answer()`` (the oldest batch started). Leaving the block stops the
    worker and waits for it.

    A worker that cannot start, stops or answers nonsense is set aside: ``answer`` gives None
    from then on and the store types in its own process (slower, the same types)."""

    def __init__(self, typer: Typer) -> None:
        self._typer = typer
        self._worker: asyncio.subprocess.Process | None = None
        self._sent = 0
        self._broken = False

    async def __aenter__(self) -> BulkTyping:
        try:
            self._worker = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "memory.cognition.typing_worker",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=_LINE_LIMIT,
            )  # fmt: skip
        except OSError as exc:
            self._set_aside(f"cannot start: {exc}")
            return self
        self._write([[text, stype.value] for text, stype in self._typer.corrections])
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        worker, self._worker = self._worker, None
        if worker is None:
            return
        if worker.stdin is not None and not worker.stdin.is_closing():
            worker.stdin.close()  # end of input: the worker exits
        try:
            await asyncio.wait_for(worker.wait(), timeout=10)
        except (TimeoutError, asyncio.CancelledError):
            worker.kill()
            await worker.wait()
            raise

    def _set_aside(self, why: str) -> None:
        if not self._broken:
            _log.warning("typing_worker.set_aside", extra={"fields": {"why": why}})
        self._broken = True

    def _write(self, doc: object) -> None:
        worker = self._worker
        if self._broken or worker is None or worker.stdin is None or worker.stdin.is_closing():
            self._set_aside("its input is closed")
            return
        worker.stdin.write(json.dumps(doc).encode() + b"\n")

    def start(self, batch: Sequence[NewCrystal]) -> None:
        self._write({"texts": [n.text for n in batch], "untyped": [n.semantic_type is None for n in batch],
                     "chat": [n.voice is not None for n in batch]})  # fmt: skip
        self._sent += 1

    async def answer(self) -> WorkerAnswer | None:
        """The worker's answer for the oldest batch started (``Typer.classify_batch``: hashes,
        sensitivities, typings), or None when it was set aside (then the caller does it all itself)."""
        self._sent -= 1
        worker = self._worker
        if self._broken or worker is None or worker.stdin is None or worker.stdout is None:
            return None
        try:
            await worker.stdin.drain()
            line = await worker.stdout.readline()
            doc = json.loads(line)
            return WorkerAnswer(
                hashes=[str(h) for h in doc["hashes"]],
                sensitivities=[Sensitivity(s) for s in doc["sensitivity"]],
                typed=list(doc["typed"]),
            )
        except (OSError, ValueError, TypeError, KeyError) as exc:  # a dead worker: b"" is not JSON
            self._set_aside(f"{type(exc).__name__}: {exc}")
            return None
