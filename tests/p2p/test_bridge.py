"""The trio thread the libp2p host and the chain client run on, driven from asyncio."""

from __future__ import annotations

import asyncio
import functools
import threading

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
