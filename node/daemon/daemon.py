"""The daemon: owns the lifecycle of every part of the node.

Start order is the order of ``build_parts``; stop is the reverse, within the
configured shutdown budget. A background loop that fails is restarted by the
supervisor and counted in ``status`` (issue 48); only a part that cannot start
stops the daemon.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from typing import Any

from ground.events import get_logger
from ground.settings import SettingError
from node.daemon.wiring import build_parts
from node.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError
from node.runtime.context import NodeContext
from node.runtime.lifecycle import Part, PartStack, TaskSupervisor
from node.runtime.status import DaemonStatus, write_status

log = get_logger("node.daemon")


class Daemon:
    def __init__(self, ctx: NodeContext, parts: list[Part] | None = None) -> None:
        self.ctx = ctx
        self.supervisor = TaskSupervisor()
        self._parts = parts if parts is not None else build_parts(ctx, self.supervisor, self.fresh_status)
        self._stack = PartStack()
        self._stop = asyncio.Event()
        self._running = asyncio.Event()
        self._failure: str | None = None
        self._failure_code = EXIT_FAILURE
        self._state = "starting"
        self._started_at_ms = ctx.now_ms()

    @property
    def state(self) -> str:
        return self._state

    async def wait_running(self) -> None:
        """Return once every part has started (never, if start failed)."""
        await self._running.wait()

    def request_stop(self, reason: str) -> None:
        if not self._stop.is_set():
            log.info("node.stop_requested", reason=reason)
            self._stop.set()

    def status(self) -> DaemonStatus:
        cfg = self.ctx.loaded.config
        started = set(self._stack.started)
        return DaemonStatus(
            state=self._state,
            pid=os.getpid(),
            started_at_ms=self._started_at_ms,
            updated_at_ms=self.ctx.now_ms(),
            name=cfg.node.name,
            role=cfg.node.role,
            peer_id=self.ctx.identity.peer_id,
            parts={p.name: ("running" if p.name in started else "stopped") for p in self._parts},
            details={
                "tasks": self.supervisor.names,
                "restarts": {name: h.as_dict() for name, h in self.supervisor.health().items()},
                **_part_details(self._parts),
            },
        )

    async def fresh_status(self) -> DaemonStatus:
        """``status`` after each running part that keeps figures of its own has read them anew (the
        crystal count was the one at start until issue 32)."""
        await self._refresh_parts()
        return self.status()

    async def _refresh_parts(self) -> None:
        for part in self._parts:
            refresh = getattr(part, "refresh", None)
            if part.name not in self._stack.started or not callable(refresh):
                continue
            try:
                await refresh()
            except (OSError, sqlite3.Error) as exc:  # a figure that could not be read keeps its last value
                log.warning("status.refresh_failed", part=part.name, error=repr(exc))

    def _publish_status(self) -> None:
        try:
            write_status(self.ctx.paths.status_file, self.status())
        except OSError as exc:
            log.warning("status.write_failed", error=str(exc))

    async def run(self) -> int:
        """Run until a signal or a failure; returns the process exit code."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop, signal.Signals(sig).name)
        try:
            return await self._run()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    async def _run(self) -> int:
        cfg = self.ctx.loaded.config
        self._publish_status()
        try:
            for part in self._parts:
                await self._stack.start(part)
        except (UsageError, SettingError) as exc:  # the user can fix it (a busy port, an embedder's url): exit 2
            self._failure = str(exc)
            self._failure_code = EXIT_USAGE
            log.error("node.start_failed", error=str(exc))
            self._stop.set()
        except Exception as exc:  # report which part failed, then unwind the others
            self._failure = f"part failed to start: {exc!r}"
            log.error("node.start_failed", error=repr(exc), exc_info=True)
            self._stop.set()
        if not self._stop.is_set():
            self._state = "running"
            self._running.set()
            self.supervisor.spawn("status-reporter", lambda: self._report_status(cfg.node.status_interval_s))
            log.info(
                "node.started",
                name=cfg.node.name,
                role=cfg.node.role,
                peer_id=self.ctx.identity.peer_id,
                data_dir=str(self.ctx.paths.data_dir),
                config=str(self.ctx.loaded.path or "embedded defaults"),
                parts=",".join(self._stack.started),
            )
            self._publish_status()
        await self._stop.wait()
        return await self._shutdown(cfg.node.shutdown_timeout_s)

    async def _shutdown(self, budget_s: float) -> int:
        self._state = "stopping"
        self._publish_status()
        deadline = time.monotonic() + budget_s
        stuck_tasks = await self.supervisor.close(timeout=max(0.1, deadline - time.monotonic()) / 2)
        stuck_parts = await self._stack.stop_all(deadline)
        self._state = "stopped"
        self._publish_status()
        if stuck_tasks or stuck_parts:
            log.error("node.unclean_stop", tasks=",".join(stuck_tasks), parts=",".join(stuck_parts))
            return EXIT_FAILURE
        if self._failure:
            log.error("node.stopped", failure=self._failure)
            return self._failure_code
        log.info("node.stopped", uptime_s=round((self.ctx.now_ms() - self._started_at_ms) / 1000, 1))
        return EXIT_OK

    async def _report_status(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self._refresh_parts()
            self._publish_status()


def _part_details(parts: list[Part]) -> dict[str, Any]:
    """What each part that has something to say reports (``details()``, cheap and synchronous)."""
    out: dict[str, Any] = {}
    for part in parts:
        details = getattr(part, "details", None)
        if callable(details):
            out[part.name] = details()
    return out
