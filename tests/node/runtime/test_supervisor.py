"""The task supervisor (issue 48): a loop that fails is restarted after a growing wait, counted, and
still stopped and awaited by ``close``. The wait and the clock are injected: nothing sleeps."""

from __future__ import annotations

import asyncio

from node.runtime.lifecycle import TaskSupervisor, restart_delay


class FakeTime:
    """A clock that the injected sleep moves forward: the supervisor's waits are recorded, not slept."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


async def test_a_loop_that_fails_twice_is_restarted_with_growing_waits_counted_and_closed() -> None:
    fake = FakeTime()
    supervisor = TaskSupervisor(sleep=fake.sleep, clock=fake.clock, first_s=1.0, max_s=300.0, healthy_s=60.0)
    runs = 0
    working = asyncio.Event()
    stopped = asyncio.Event()

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs <= 2:
            raise ValueError(f"failure {runs}")
        working.set()
        try:
            await asyncio.Event().wait()  # works until cancelled
        finally:
            stopped.set()

    task = supervisor.spawn("flaky", flaky)
    async with asyncio.timeout(5):
        await working.wait()
    assert runs == 3
    assert fake.waits == [1.0, 2.0]  # the second failure in a row waits twice as long
    health = supervisor.health()["flaky"]
    assert (health.restarts, health.last_error) == (2, "ValueError('failure 2')")
    assert supervisor.names == ["flaky"]
    assert await supervisor.close(timeout=5) == []
    assert stopped.is_set() and task.cancelled()
    assert supervisor.names == []


async def test_close_stops_a_loop_while_it_waits_to_be_restarted() -> None:
    supervisor = TaskSupervisor(first_s=3600.0)  # the real sleep: close must cancel the hour's wait

    failed = asyncio.Event()

    async def broken() -> None:
        failed.set()
        raise RuntimeError("always")

    task = supervisor.spawn("broken", broken)
    async with asyncio.timeout(5):
        await failed.wait()
        await asyncio.sleep(0)  # the supervisor counts the failure and starts its wait
        assert supervisor.health()["broken"].restarts == 1
        assert await supervisor.close(timeout=5) == []
    assert task.cancelled()


async def test_a_loop_that_returns_is_done_and_not_run_again() -> None:
    fake = FakeTime()
    supervisor = TaskSupervisor(sleep=fake.sleep, clock=fake.clock)
    runs = 0

    async def once() -> None:
        nonlocal runs
        runs += 1

    await supervisor.spawn("once", once)
    assert runs == 1 and fake.waits == [] and supervisor.names == [] and supervisor.health() == {}


def test_the_wait_doubles_to_its_cap_and_starts_again_after_a_healthy_run() -> None:
    def wait(previous: float | None, ran: float) -> float:
        return restart_delay(previous, ran, first_s=1.0, max_s=300.0, healthy_s=60.0)

    waits = [wait(None, 0.0)]
    for _ in range(10):
        waits.append(wait(waits[-1], 0.5))
    assert waits[:4] == [1.0, 2.0, 4.0, 8.0]
    assert waits[-1] == 300.0 and max(waits) == 300.0
    assert wait(300.0, 61.0) == 1.0  # it had run healthily for a minute: a fresh failure
