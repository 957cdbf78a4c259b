"""Structured concurrency for the daemon: parts start in order and stop in reverse;
background tasks are named, owned, and awaited.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from ground import failpoints
from ground.clock import wall_clock_ms
from ground.errors import WiringError
from ground.events import get_logger

log = get_logger("node.lifecycle")


class Part(Protocol):
    """A piece of the daemon with a start and a stop (memory store, p2p host, API…)."""

    name: str

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


#: A loop that failed waits this long before it runs again, doubling at each failure in a row…
RESTART_FIRST_S = 1.0
#: …up to this: a loop that fails for good is tried every five minutes, never given up on.
RESTART_MAX_S = 300.0
#: A loop that ran this long before it failed was healthy: its next wait starts at ``RESTART_FIRST_S``
#: again (one failure a day must not wait five minutes because of last week's).
HEALTHY_AFTER_S = 120.0

Sleep = Callable[[float], Awaitable[object]]
LoopFactory = Callable[[], Coroutine[Any, Any, None]]


@dataclass
class TaskHealth:
    """How often a background task has been restarted, and why it last failed (for ``status`` and
    ``/metrics``)."""

    restarts: int = 0
    last_error: str | None = None
    last_failed_ms: int | None = None  # wall clock, for a person: when it last failed

    def as_dict(self) -> dict[str, Any]:
        return {"restarts": self.restarts, "last_error": self.last_error, "last_failed_ms": self.last_failed_ms}


def restart_delay(previous_s: float | None, ran_s: float, *, first_s: float, max_s: float, healthy_s: float) -> float:
    """The wait before a failed loop runs again: ``first_s`` after its first failure or after a run of
    at least ``healthy_s``, else twice the previous wait, at most ``max_s``."""
    if previous_s is None or ran_s >= healthy_s:
        return min(first_s, max_s)
    return min(previous_s * 2, max_s)


class TaskSupervisor:
    """Owns the daemon's background loops (issue 48: one part's failure never stops the node).

    ``spawn`` takes a function that makes the loop's coroutine, not the coroutine: a loop from which
    an exception escapes is logged with its cause, counted (``health``), and, after a wait that
    doubles from ``RESTART_FIRST_S`` to ``RESTART_MAX_S`` (reset once a run lasted ``HEALTHY_AFTER_S``),
    run again *from its start*. Nothing a failed run was doing is lost or done twice because every
    supervised loop works in idempotent rounds: the capture watcher resumes from the watermarks it
    saves per file, the embedder from the backlog in the database, the market and the timers from
    their next round.

    Which failures still stop the daemon: none of a running loop's. What cannot start (a port that
    cannot be bound, a database that cannot be opened) fails in its part's ``start``, before any loop
    runs, and fails the start clearly (``PartStack``, ``Daemon._run``). A ``BaseException`` that is
    not an ``Exception`` (``SystemExit``, ``KeyboardInterrupt``) is not a part's failure: asyncio
    stops the event loop with it, and no restart is tried. A loop that returns is done and not rerun.

    ``close`` cancels every loop, waiting ones included, and awaits them.
    """

    def __init__(
        self,
        *,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        now_ms: Callable[[], int] = wall_clock_ms,
        first_s: float = RESTART_FIRST_S,
        max_s: float = RESTART_MAX_S,
        healthy_s: float = HEALTHY_AFTER_S,
    ) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._health: dict[str, TaskHealth] = {}
        self._sleep = sleep
        self._clock = clock
        self._now_ms = now_ms
        self._first_s, self._max_s, self._healthy_s = first_s, max_s, healthy_s

    @property
    def names(self) -> list[str]:
        return sorted(self._tasks)

    def health(self) -> dict[str, TaskHealth]:
        """The tasks restarted at least once since the daemon started, by name."""
        return {name: h for name, h in sorted(self._health.items()) if h.restarts}

    def spawn(self, name: str, run: LoopFactory) -> asyncio.Task[None]:
        """Run ``run()`` as the task ``name``, again after each failure, until it returns or ``close``."""
        if name in self._tasks:
            raise WiringError(f"a task named {name!r} is already running")
        task = asyncio.create_task(self._supervise(name, run), name=name)
        self._tasks[name] = task
        task.add_done_callback(self._done)
        return task

    async def _supervise(self, name: str, run: LoopFactory) -> None:
        delay: float | None = None
        health = self._health.setdefault(name, TaskHealth())
        while True:
            started = self._clock()
            try:
                failpoints.check(f"task:{name}")  # a test's way to fail this loop in a real daemon
                await run()
                return
            except Exception as exc:  # any part's failure is logged and retried, never fatal
                delay = restart_delay(
                    delay, self._clock() - started, first_s=self._first_s, max_s=self._max_s, healthy_s=self._healthy_s
                )
                health.restarts += 1
                health.last_error = repr(exc)[:300]
                health.last_failed_ms = self._now_ms()
                log.error("task.failed", task=name, error=repr(exc), restart_in_s=delay, exc_info=True)
            await self._sleep(delay)
            log.info("task.restarting", task=name, restarts=health.restarts)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task.get_name(), None)

    async def close(self, timeout: float) -> list[str]:
        """Cancel every task and wait for them; returns the names that did not finish in time."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if not tasks:
            return []
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        return sorted(t.get_name() for t in pending)


class PartStack:
    """Starts parts in order; stops the started ones in reverse, each within a time limit."""

    def __init__(self) -> None:
        self._started: list[Part] = []

    @property
    def started(self) -> list[str]:
        return [p.name for p in self._started]

    async def start(self, part: Part) -> None:
        log.info("part.starting", part=part.name)
        await part.start()
        self._started.append(part)
        log.info("part.started", part=part.name)

    async def stop_all(self, deadline: float) -> list[str]:
        """Stop in reverse order, each part within what is left of the budget up to ``deadline``
        (``time.monotonic()``); returns the names of parts that failed or hung while stopping. (A fixed
        slice per part left the memory part, stopped last, 0.67 s to close its database on a busy
        machine while the parts before it had stopped in milliseconds.)"""
        failed: list[str] = []
        while self._started:
            part = self._started.pop()
            timeout = max(0.1, deadline - time.monotonic())
            try:
                await asyncio.wait_for(part.stop(), timeout)
                log.info("part.stopped", part=part.name)
            except TimeoutError:
                log.error("part.stop_timeout", part=part.name, timeout_s=round(timeout, 2))
                failed.append(part.name)
            except Exception as exc:  # noqa: BLE001 - one part's failure must not keep the others running
                log.error("part.stop_failed", part=part.name, error=repr(exc))
                failed.append(part.name)
        return failed
