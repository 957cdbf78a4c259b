"""The README's walkthrough, run verbatim: three daemons, anvil, a weather broadcast and a purchase."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

README = Path(__file__).resolve().parent.parent / "README.md"
PORTS = (8545, 4101, 4102, 4103)


def walkthrough() -> str:
    text = README.read_text()
    block = re.search(r"<!-- walkthrough:start -->\n```sh\n(.*?)```\n<!-- walkthrough:end -->", text, re.DOTALL)
    assert block, "the README lost its walkthrough markers"
    return block.group(1)


def _busy(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.timeout(300)
def test_the_readme_walkthrough_works_as_written(tmp_path: Path) -> None:
    anvil = shutil.which("anvil")
    if anvil is None:
        pytest.skip("anvil is not installed (npm install -g @foundry-rs/anvil, see the README)")
    busy = [port for port in PORTS if _busy(port)]
    if busy:
        pytest.skip(f"the walkthrough's ports {busy} are taken on this machine")
    env = {k: v for k, v in os.environ.items() if not k.startswith("BITTERBOT_")}  # as a user's shell would be
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), str(Path(anvil).parent), env.get("PATH", "")])
    env["HOME"] = str(tmp_path)
    script = "set -euo pipefail\n" + walkthrough()
    # Its own session: whatever the script started (anvil, three daemons) is stopped even if it fails.
    proc = subprocess.Popen(
        ["bash", "-c", script], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    logs = {node: (tmp_path / node / "node.log").read_text() for node in ("manager", "seller", "buyer")}
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}\n{logs['buyer'][-2000:]}"
    out = result.stdout
    assert "verified" in out and "walkthrough drill" in out
    assert "Rotate nginx logs without downtime" in out  # the bought skill, shown from the buyer's memory
    assert re.search(r"earned    0\.\d{6} USDC from 1 sales to 1 buyers", out), out[-2000:]
    for node, log in logs.items():
        assert "Traceback" not in log, f"{node}:\n{log}"
        assert "node.stopped" in log, f"{node} did not stop cleanly:\n{log[-2000:]}"
