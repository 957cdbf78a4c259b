"""A trio event loop on a thread of its own, driven from the asyncio loop that started it.

py-libp2p is trio-native, and web3's synchronous calls (and eth-tester, which is not thread-safe)
must stay off the daemon's loop: both run on a ``TrioThread``. Work goes in with ``call`` (an
async function run in the thread's nursery, its result or error settled on an asyncio future),
and comes back with ``to_loop`` (a callback scheduled on the asyncio loop) or ``on_loop`` (the
trio side awaiting an asyncio coroutine). ``stop`` is awaited on the loop, never by joining the
thread from a worker: a stop that is itself cancelled leaves no thread behind for asyncio to join.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import trio

from ground.errors import BitterbotError, Unavailable, WiringError

T = TypeVar("T")
_log = logging.getLogger("ground.bridge")
#: A thread that may restart waits this long after its first failure, twice as long after each next
#: one up to the most, and starts counting again from the first once a run has lasted the reset.
RESTART_FIRST_S, RESTART_MAX_S, RESTART_RESET_S = 1.0, 60.0, 300.0
#: A run after a failure that has not served (called ``ready``) within this is cut off and run again.
RESTART_READY_S = 30.0


class BridgeStopped(Unavailable, RuntimeError):
    """The thread is not running (not started, stopped, or it failed): what it serves is unavailable
    now (503). Still a RuntimeError, as asyncio and trio call a closed loop."""


class BridgeStuck(BitterbotError, TimeoutError):
    """The thread did not stop in the time it was given."""


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class TrioThread:
    """Start with ``await start(main)``; ``main`` runs under ``trio.run`` on the thread, sets things
    up, calls ``ready(value, nursery)`` (``start`` returns ``value``), and returns once
    ``await stopping()`` does. Calls run in the nursery ``main`` handed over, so ``main`` decides
    what outlives them (the libp2p host closes only after they are cancelled).

    ``restart``: when ``main`` fails after it was ready (or returns unasked), run it again after a
    pause that doubles, instead of leaving what the thread serves down until the process restarts;
    calls made meanwhile get ``BridgeStopped``. For a thread whose ``main`` builds everything it
    serves (the libp2p host); not for one that keeps state a new run would lose."""

    def __init__(self, name: str, *, restart: bool = False) -> None:
        self.name = name
        self._restart = restart
        #: Runs of ``main`` that failed after it was ready and were started again, and the last error.
        self.restarts = 0
        self.last_failure: str | None = None
        self._stop_asked = threading.Event()
        self._was_ready = False
        self._ready_this_run = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ended: asyncio.Event | None = None
        self._ready: asyncio.Future[Any] | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        #: Calls queued and not yet answered: told the thread stopped if it ends first.
        self._queued: set[asyncio.Future[Any]] = set()

    @property
    def started(self) -> bool:
        return self._thread is not None

    async def start(self, main: Callable[[], Awaitable[None]] | None = None, *, timeout_s: float = 30) -> Any:
        """Start the thread; return what ``main`` passed to ``ready``. Without ``main``, the thread
        only runs calls until it is stopped."""
        if self._thread is not None:
            raise WiringError(f"the {self.name} thread is already running")
        self._loop = asyncio.get_running_loop()
        self._ended = asyncio.Event()
        self._ready = self._loop.create_future()
        self._stop_asked.clear()
        self._was_ready = False
        self._thread = threading.Thread(target=self._thread_main, args=(main or self._idle,), name=self.name,
                                        daemon=True)  # fmt: skip
        self._thread.start()
        try:
            return await asyncio.wait_for(self._ready, timeout=timeout_s)
        except BaseException:
            await self.stop()
            raise

    async def stop(self, *, timeout_s: float = 15) -> None:
        """Ask ``main`` to return, and wait (on the loop) until the thread has ended."""
        thread = self._thread
        if thread is None:
            return
        self._stop_asked.set()  # a thread between two runs stops waiting to run again
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):  # already finished on its own
                self._token.run_sync_soon(self._stop.set)
        ended = self._ended
        try:
            if ended is not None:
                await asyncio.wait_for(ended.wait(), timeout_s)
        except TimeoutError:
            raise BridgeStuck(f"the {self.name} thread did not stop within {timeout_s:g} s") from None
        finally:
            self._thread = None

    async def call(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` on the trio thread and await its result here."""
        nursery = self._nursery

        def start(settle: Callable[[T | None, BaseException | None], None]) -> None:
            async def run() -> None:
                try:
                    result = await work()
                except Exception as exc:  # noqa: BLE001 - handed to the caller, who decides
                    settle(None, exc)
                else:
                    settle(result, None)
                finally:  # cancelled by shutdown: the caller must not wait forever (a no-op if settled)
                    settle(None, BridgeStopped(f"the {self.name} thread stopped"))

            assert nursery is not None
            nursery.start_soon(run)

        return await self._submit(start)

    async def call_blocking(self, work: Callable[[], T]) -> T:
        """Run a synchronous ``work`` on the thread, which it holds until done: such calls run one at
        a time, in the order they were made (trio runs ``run_sync_soon`` callbacks first in, first
        out), which web3 on eth-tester needs."""

        def run(settle: Callable[[T | None, BaseException | None], None]) -> None:
            try:
                result = work()
            except Exception as exc:  # noqa: BLE001 - handed to the caller; one raised here would end trio
                settle(None, exc)
            else:
                settle(result, None)

        return await self._submit(run)

    async def _submit(self, job: Callable[[Callable[[T | None, BaseException | None], None]], None]) -> T:
        """Queue ``job`` on the thread (``run_sync_soon``: first in, first out) with the one way it
        reports back. Until it reports, its future is queued: if the thread ends first, the caller
        is told it stopped instead of waiting forever."""
        loop, token = self._loop, self._token
        if loop is None or token is None or self._nursery is None:
            raise BridgeStopped(f"the {self.name} thread is not running")
        future: asyncio.Future[T] = loop.create_future()
        self._queued.add(future)
        future.add_done_callback(self._queued.discard)

        def settle(result: T | None, error: BaseException | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed first: nobody waits
                loop.call_soon_threadsafe(_settle, future, result, error)

        try:
            token.run_sync_soon(job, settle)
        except trio.RunFinishedError:
            raise BridgeStopped(f"the {self.name} thread has stopped") from None
        return await future

    # --- trio side ---------------------------------------------------------------------

    def ready(self, value: Any, nursery: trio.Nursery) -> None:
        """From ``main``: set up; calls run in ``nursery`` from now on, and ``start`` returns ``value``."""
        self._nursery = nursery
        self._was_ready = self._ready_this_run = True
        assert self._loop is not None
        assert self._ready is not None
        self._loop.call_soon_threadsafe(_settle, self._ready, value, None)

    async def stopping(self) -> None:
        """From ``main``: returns when ``stop`` was asked for."""
        assert self._stop is not None
        await self._stop.wait()

    def to_loop(self, callback: Callable[..., Any], *args: Any) -> None:
        """From the trio side: run ``callback(*args)`` on the asyncio loop, soon."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(callback, *args)

    async def on_loop(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """From the trio side: run ``coroutine`` on the asyncio loop and await its result."""
        assert self._loop is not None
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        future.add_done_callback(lambda _: token.run_sync_soon(done.set))
        await done.wait()
        return future.result()

    async def _idle(self) -> None:
        async with trio.open_nursery() as nursery:
            self.ready(None, nursery)
            await self.stopping()
            nursery.cancel_scope.cancel()

    def _thread_main(self, main: Callable[[], Awaitable[None]]) -> None:
        loop = self._loop
        assert loop is not None
        assert self._ready is not None
        try:
            pause = RESTART_FIRST_S
            while True:
                began = time.monotonic()
                failure = self._run_once(main)
                if self._stop_asked.is_set() or not self._restart or not self._was_ready:
                    if failure is not None:
                        with contextlib.suppress(RuntimeError):
                            loop.call_soon_threadsafe(_settle, self._ready, None, failure)
                    return
                # ``main`` ended on its own after it served: what it serves is down until it runs again.
                self.restarts += 1
                self.last_failure = repr(failure) if failure is not None else "main returned unasked"
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._fail_queued)
                if time.monotonic() - began >= RESTART_RESET_S:
                    pause = RESTART_FIRST_S
                _log.warning(
                    "bridge.thread_restarting",
                    extra={"fields": {"thread": self.name, "in_s": pause, "restarts": self.restarts}},
                )
                if self._stop_asked.wait(pause):
                    return
                pause = min(pause * 2, RESTART_MAX_S)
        finally:
            self._nursery = None
            with contextlib.suppress(RuntimeError):  # the loop closed first: nobody waits
                loop.call_soon_threadsafe(self._fail_queued)
            with contextlib.suppress(RuntimeError):  # ended before it was ready: the starter must hear
                loop.call_soon_threadsafe(
                    _settle, self._ready, None, BridgeStopped(f"the {self.name} thread ended before it was ready")
                )
            ended = self._ended
            if ended is not None:
                with contextlib.suppress(RuntimeError):  # the loop closed first: nobody waits
                    loop.call_soon_threadsafe(ended.set)

    def _run_once(self, main: Callable[[], Awaitable[None]]) -> BaseException | None:
        """One ``trio.run`` of ``main``: its error, or None when it returned."""
        try:
            trio.run(self._trio_main, main)
        except BaseException as exc:  # noqa: BLE001 - reported to the starter or restarted, and logged
            _log.error("bridge.thread_failed", extra={"fields": {"thread": self.name, "error": repr(exc)}})
            return exc
        return None

    def _fail_queued(self) -> None:
        """On the loop (which alone touches ``_queued``): the thread ended before these ran."""
        for queued in list(self._queued):
            _settle(queued, None, BridgeStopped(f"the {self.name} thread stopped"))

    async def _trio_main(self, main: Callable[[], Awaitable[None]]) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        self._ready_this_run = False
        try:
            if not (self._restart and self._was_ready):
                await main()
                return
            # A run after a failure that never serves (stuck setting up) would leave the thread up and
            # what it serves down for good: it is cut off, and the loop in ``_thread_main`` runs it again.
            async with trio.open_nursery() as guard:
                guard.start_soon(self._serving_within, RESTART_READY_S)
                await main()
                guard.cancel_scope.cancel()
        finally:
            self._nursery = None

    async def _serving_within(self, seconds: float) -> None:
        await trio.sleep(seconds)
        if not self._ready_this_run:
            raise BridgeStuck(f"the {self.name} thread's run did not serve within {seconds:g} s after a restart")
