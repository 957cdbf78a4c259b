"""A stopped daemon's process ends within its grace, even with a thread stuck in a library."""

from __future__ import annotations

import subprocess
import sys
import textwrap

STUCK_AFTER_STOP = textwrap.dedent(
    """
    import asyncio, threading
    from node.runtime.exit_watchdog import arm_exit_watchdog
    from node.logs import configure_logging

    configure_logging("info", "text")

    async def main() -> int:
        # What a stop that ran out of budget leaves: a worker thread asyncio will join at the end.
        asyncio.get_running_loop().run_in_executor(None, threading.Event().wait)
        threading.Thread(target=threading.Event().wait, name="stuck-library").start()
        arm_exit_watchdog(0.5, 7)
        return 0

    raise SystemExit(asyncio.run(main()))
    """
)


def test_a_process_held_by_stuck_threads_ends_with_the_daemons_code_and_names_them() -> None:
    # Without the watchdog this process never ends: the timeout below would fire.
    done = subprocess.run([sys.executable, "-c", STUCK_AFTER_STOP], capture_output=True, text=True, timeout=30)
    assert done.returncode == 7
    assert "node.forced_exit" in done.stderr
    assert "stuck-library" in done.stderr


def test_a_process_that_ends_on_its_own_is_not_cut_short() -> None:
    program = STUCK_AFTER_STOP.replace(
        'threading.Thread(target=threading.Event().wait, name="stuck-library").start()', "pass"
    ).replace("run_in_executor(None, threading.Event().wait)", "run_in_executor(None, print, 'ran')")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert "ran" in done.stdout
    assert "node.forced_exit" not in done.stderr
