"""``bitterbot-node stop``: ends the daemon that runs on a data dir, as SIGTERM would, and waits
until it has let go of the data dir (issue 32: there was no way short of finding its pid)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import click

from node.cli.common import handles_errors, location_options, resolve
from node.errors import NodeError, UsageError
from node.runtime.lockfile import lock_holder

#: Beyond the daemon's own shutdown budget: the interpreter's exit and the lock's release.
EXTRA_WAIT_S = 5.0
POLL_S = 0.1


@click.command("stop")
@location_options
@click.option(
    "--timeout", type=click.FloatRange(min=0.1), default=None,
    help="Seconds to wait for it to stop (default: [node] shutdown_timeout_s + 5).",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@handles_errors
def stop(config_path: Path | None, data_dir: Path | None, timeout: float | None, as_json: bool) -> None:
    """Stop the daemon running on this data dir and wait until it has."""
    loaded, paths = resolve(config_path, data_dir)

    def said(text: str, pid: int | None, stopped: bool) -> None:
        click.echo(json.dumps({"stopped": stopped, "pid": pid}) if as_json else text)

    pid = lock_holder(paths.lock_file)
    if pid is None:
        said(f"no daemon is running on {paths.data_dir}", None, False)
        return
    if pid <= 0:
        raise UsageError(f"a process holds {paths.lock_file} but its pid cannot be read: `fuser {paths.lock_file}`")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:  # it stopped between the look and the signal
        said(f"the daemon (pid {pid}) had already stopped", pid, True)
        return
    except PermissionError:
        raise UsageError(f"the daemon (pid {pid}) belongs to another user: stop it as that user") from None
    wait_s = timeout if timeout is not None else loaded.config.node.shutdown_timeout_s + EXTRA_WAIT_S
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if lock_holder(paths.lock_file) is None:
            said(f"stopped the daemon (pid {pid})", pid, True)
            return
        time.sleep(POLL_S)
    raise NodeError(
        f"the daemon (pid {pid}) did not stop within {wait_s:g} s; `kill -9 {pid}` ends it "
        "(the store recovers what it was writing on the next run)"
    )
