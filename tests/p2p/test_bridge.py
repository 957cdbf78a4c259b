"""The trio thread the libp2p host and the chain client run on, driven from asyncio."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable

import pytest
import trio

from ground.bridge import BridgeStopped, TrioThread


async def test_calls_run_on_the_thread_in_order_and_errors_come_back_as_raised() -> None:
    bridge = TrioThread("worker")
    await bridge.start()
    try:
        seen: list[tuple[int, str]] = []

        def work(i: int) -> int:
            seen.append((i, threading.current_thread().name))
            return i * i

        results = await asyncio.gather(*(bridge.call_blocking(functools.partial(work, i)) for i in range(5)))
        assert results == [0, 1, 4, 9, 16]
        assert seen == [(i, "worker") for i in range(5)]  # one at a time, in the order asked

        async def fails() -> None:
            raise KeyError("nope")

        with pytest.raises(KeyError, match="nope"):
            await bridge.call(fails)
    finally:
        await bridge.stop()
    assert not bridge.started


async def test_a_call_in_flight_at_stop_is_told_so_and_later_calls_are_refused() -> None:
    bridge = TrioThread("worker")
    await bridge.start()
    pending = asyncio.ensure_future(bridge.call(trio.sleep_forever))
    await asyncio.sleep(0.05)
    await bridge.stop()
    with pytest.raises(BridgeStopped, match="stopped"):
        await pending
    with pytest.raises(BridgeStopped, match="not running"):
        await bridge.call(trio.sleep_forever)
    await bridge.stop()  # twice is fine


async def test_main_gives_start_its_value_and_the_trio_side_can_await_the_loop() -> None:
    bridge = TrioThread("host")
    loop_thread = threading.current_thread().name

    async def on_the_loop() -> str:
        return threading.current_thread().name

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            bridge.ready(await bridge.on_loop(on_the_loop()), nursery)
            await bridge.stopping()

    assert await bridge.start(main) == loop_thread
    await bridge.stop()


async def test_a_main_that_fails_before_it_is_ready_fails_start() -> None:
    bridge = TrioThread("host")

    async def main() -> None:
        raise OSError("address in use")

    with pytest.raises(OSError, match="address in use"):
        await bridge.start(main)
    assert not bridge.started

    async def returns_early() -> None:
        return None

    with pytest.raises(BridgeStopped, match="ended before it was ready"):
        await TrioThread("host").start(returns_early)


class _FailsOnce:
    """A ``main`` that serves, then fails once after it was ready; its next run serves until stopped."""

    def __init__(self, bridge: TrioThread) -> None:
        self.bridge = bridge
        self.runs = 0

    async def __call__(self) -> None:
        self.runs += 1
        async with trio.open_nursery() as nursery:
            self.bridge.ready(self.runs, nursery)
            if self.runs == 1:
                await trio.sleep(0.05)
                raise RuntimeError("the library's task group blew up")
            await self.bridge.stopping()
            nursery.cancel_scope.cancel()


async def _wait_until(check: Callable[[], bool]) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("never came true")


async def test_a_main_that_fails_after_serving_runs_again_and_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ground.bridge.RESTART_FIRST_S", 0.1)
    bridge = TrioThread("host", restart=True)
    main = _FailsOnce(bridge)
    assert await bridge.start(main) == 1
    await _wait_until(lambda: main.runs == 2 and bridge._nursery is not None)

    async def answer() -> str:
        return "served"

    assert await bridge.call(answer) == "served"
    assert bridge.restarts == 1 and "blew up" in (bridge.last_failure or "")
    await bridge.stop()
    assert not bridge.started


async def test_without_restart_a_failed_main_leaves_the_thread_down() -> None:
    bridge = TrioThread("host")
    main = _FailsOnce(bridge)
    await bridge.start(main)
    await _wait_until(lambda: bridge._nursery is None)
    await asyncio.sleep(0.3)
    with pytest.raises(BridgeStopped):
        await bridge.call(trio.sleep_forever)
    assert main.runs == 1 and bridge.restarts == 0
    await bridge.stop()


async def test_a_stop_during_the_pause_before_a_restart_ends_the_thread_without_waiting_it_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("ground.bridge.RESTART_FIRST_S", 3_600.0)  # waited out, the test would hang
    bridge = TrioThread("host", restart=True)
    main = _FailsOnce(bridge)
    await bridge.start(main)
    await _wait_until(lambda: bridge.restarts == 1)
    await bridge.stop(timeout_s=60)
    assert main.runs == 1 and not bridge.started


async def test_a_run_after_a_failure_that_never_serves_is_cut_off_and_run_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("ground.bridge.RESTART_FIRST_S", 0.05)
    monkeypatch.setattr("ground.bridge.RESTART_READY_S", 0.3)
    bridge = TrioThread("host", restart=True)
    runs: list[int] = []

    async def main() -> None:  # serves and fails; then hangs setting up; then serves
        runs.append(len(runs) + 1)
        if len(runs) == 2:
            await trio.sleep_forever()
        async with trio.open_nursery() as nursery:
            bridge.ready(len(runs), nursery)
            if len(runs) == 1:
                raise RuntimeError("failed after serving")
            await bridge.stopping()
            nursery.cancel_scope.cancel()

    await bridge.start(main)
    await _wait_until(lambda: len(runs) == 3 and bridge._nursery is not None)
    assert bridge.restarts == 2 and "did not serve" in (bridge.last_failure or "")
    await bridge.stop()
