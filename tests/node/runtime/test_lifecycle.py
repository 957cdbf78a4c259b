"""The daemon's lifecycle in-process: order of start and stop, failures, hung parts, crashed tasks."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from crypto.identity import Identity
from ground.errors import WiringError
from node.config_loading import load_config
from node.daemon.daemon import Daemon
from node.paths import NodePaths
from node.runtime.context import NodeContext
from node.runtime.status import read_status


class Recorder:
    def __init__(self, name: str, events: list[str], *, fail_start: bool = False, hang_stop: bool = False) -> None:
        self.name = name
        self.events = events
        self.fail_start = fail_start
        self.hang_stop = hang_stop

    async def start(self) -> None:
        if self.fail_start:
            raise RuntimeError(f"{self.name} cannot start")
        self.events.append(f"start {self.name}")

    async def stop(self) -> None:
        if self.hang_stop:
            await asyncio.sleep(3600)
        self.events.append(f"stop {self.name}")


def make_daemon(tmp_path: Path, parts: list[Recorder], **env: str) -> Daemon:
    loaded = load_config(None, {"BITTERBOT_NODE__SHUTDOWN_TIMEOUT_S": "1.0", **env})
    paths = NodePaths.of(tmp_path, loaded.config)
    return Daemon(NodeContext(loaded, paths, Identity.generate()), parts=list(parts))


async def run_then_stop(daemon: Daemon) -> int:
    task = asyncio.create_task(daemon.run())
    async with asyncio.timeout(5):
        await daemon.wait_running()
        daemon.request_stop("test")
        return await task


async def test_parts_start_in_order_and_stop_in_reverse(tmp_path: Path) -> None:
    events: list[str] = []
    daemon = make_daemon(tmp_path, [Recorder("a", events), Recorder("b", events), Recorder("c", events)])
    code = await run_then_stop(daemon)
    assert code == 0
    assert events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]
    status = read_status(tmp_path / "status.json")
    assert status is not None and status.state == "stopped"


async def test_a_part_that_fails_to_start_unwinds_the_started_ones_and_exits_1(tmp_path: Path) -> None:
    events: list[str] = []
    daemon = make_daemon(
        tmp_path, [Recorder("a", events), Recorder("b", events, fail_start=True), Recorder("c", events)]
    )
    async with asyncio.timeout(5):
        code = await daemon.run()
    assert code == 1
    assert events == ["start a", "stop a"]


async def test_a_part_that_hangs_on_stop_is_abandoned_within_the_budget(tmp_path: Path) -> None:
    events: list[str] = []
    daemon = make_daemon(tmp_path, [Recorder("a", events), Recorder("stuck", events, hang_stop=True)])
    loop = asyncio.get_running_loop()
    started = loop.time()
    code = await run_then_stop(daemon)
    assert code == 1
    assert events == ["start a", "start stuck", "stop a"]
    assert loop.time() - started < 3


async def test_a_failed_background_loop_is_restarted_and_counted_and_the_daemon_keeps_running(
    tmp_path: Path,
) -> None:
    """Issue 48: a loop that raised stopped the daemon with exit 1; now it runs again and status counts it."""
    daemon = make_daemon(tmp_path, [])
    runs = 0
    second_run = asyncio.Event()

    async def crash_once() -> None:
        nonlocal runs
        runs += 1
        if runs == 1:
            raise RuntimeError("boom")
        second_run.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(daemon.run())
    async with asyncio.timeout(10):
        await daemon.wait_running()
        daemon.supervisor.spawn("crasher", crash_once)
        await second_run.wait()  # after the first restart's wait (1 s)
        assert daemon.state == "running" and not task.done()
        restarts = daemon.status().details["restarts"]
        assert restarts.keys() == {"crasher"}
        assert restarts["crasher"]["restarts"] == 1 and restarts["crasher"]["last_error"] == "RuntimeError('boom')"
        assert restarts["crasher"]["last_failed_ms"] > 0  # when, for the dashboard and status
        daemon.request_stop("test")
        assert await task == 0


async def test_background_tasks_are_named_unique_and_awaited_at_stop(tmp_path: Path) -> None:
    daemon = make_daemon(tmp_path, [])
    stopped = asyncio.Event()

    async def worker() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            stopped.set()

    task = asyncio.create_task(daemon.run())
    async with asyncio.timeout(5):
        await daemon.wait_running()
        daemon.supervisor.spawn("worker", worker)
        with pytest.raises(WiringError, match="already running"):
            daemon.supervisor.spawn("worker", worker)
        assert "worker" in daemon.status().details["tasks"]
        daemon.request_stop("test")
        assert await task == 0
    assert stopped.is_set()


class SlowToStop:
    def __init__(self, name: str, seconds: float) -> None:
        self.name = name
        self.seconds = seconds

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        await asyncio.sleep(self.seconds)


async def test_a_part_slow_to_stop_gets_what_the_quick_ones_left_of_the_budget() -> None:
    """Six parts, the last to stop (memory, closing its database) slow on a busy machine: it has what
    the five quick ones left of the budget, not a sixth of it (it was given 0.67 s of 4 and timed out)."""
    from node.runtime.lifecycle import PartStack

    stack = PartStack()
    await stack.start(SlowToStop("memory", 0.3))
    for name in ("p2p", "market", "metrics", "control", "api"):
        await stack.start(SlowToStop(name, 0.0))
    # A sixth of a 1 s budget (0.17 s) is less than memory needs; the whole budget is more.
    assert await stack.stop_all(time.monotonic() + 1.0) == []
