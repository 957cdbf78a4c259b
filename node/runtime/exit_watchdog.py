"""After the daemon has stopped, make the process end within a bound whatever is left running.

The daemon's own shutdown is bounded (``node.shutdown_timeout_s``), but what runs after it is
not: asyncio joins every worker thread of its default executor, and the interpreter joins every
non-daemon thread at exit. One thread stuck in a library (a libp2p close, a chain call) would
keep a stopped node's process, its data-dir lock and its port alive for ever. By the time the
watchdog is armed every part has been stopped and its data flushed, so ending the process loses
nothing."""

from __future__ import annotations

import os
import sys
import threading

from ground.events import get_logger

log = get_logger("node.exit")


def arm_exit_watchdog(grace_s: float, code: int) -> threading.Timer:
    """End the process with ``code`` if it is still alive ``grace_s`` from now."""

    def force_exit() -> None:
        stuck = sorted(t.name for t in threading.enumerate() if t is not threading.current_thread())
        log.error("node.forced_exit", grace_s=grace_s, threads=",".join(stuck))
        sys.stderr.flush()
        os._exit(code)

    timer = threading.Timer(grace_s, force_exit)
    timer.name = "exit-watchdog"
    timer.daemon = True  # never itself a reason to stay alive
    timer.start()
    return timer
