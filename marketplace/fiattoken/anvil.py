"""A real anvil (a local JSON-RPC chain, from npm) on a free loopback port, for tests and benchmarks."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator

ANVIL = shutil.which("anvil")
NO_ANVIL = "anvil is not installed (npm install -g @foundry-rs/anvil, see the README)"
START_S = 20


@contextlib.contextmanager
def anvil_process(*options: str) -> Iterator[str]:
    """Start anvil (with ``options``, e.g. ``--chain-id 84532``), yield its URL, and stop (and wait
    for) it at the end."""
    if ANVIL is None:
        raise RuntimeError(NO_ANVIL)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(  # our own anvil, on loopback
        [ANVIL, "--host", "127.0.0.1", "--port", str(port), "--silent", *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            with socket.socket() as client:
                if client.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"anvil did not start within {START_S} s")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
