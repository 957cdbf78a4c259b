"""The README's walkthrough, run verbatim: three daemons, anvil, a weather broadcast and a purchase."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests import small_machines

# real processes, hosts or chains (`-m "not slow"` skips them); the walkthrough's ports are fixed, so
# its tests run one after another on one worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("readme-walkthrough")]

README = Path(__file__).resolve().parent.parent / "README.md"
PORTS = (8545, 4101, 4102, 4103)
NODES = ("manager", "seller", "buyer")
MACHINE_MB = 256


def walkthrough() -> str:
    text = README.read_text()
    block = re.search(r"<!-- walkthrough:start -->\n```sh\n(.*?)```\n<!-- walkthrough:end -->", text, re.DOTALL)
    assert block, "the README lost its walkthrough markers"
    return block.group(1)


def _busy(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _run(folder: Path, path: str, timeout: float, script: str | None = None) -> subprocess.CompletedProcess[str]:
    """``bash walkthrough.sh`` in ``folder`` as a user's shell runs it (no BITTERBOT_ settings, PATH
    given), in its own session: whatever it started is stopped however it ends. ``script``: the
    walkthrough with the changes a test made to it, else the README's as written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BITTERBOT_")}
    env["PATH"] = path
    env["HOME"] = str(folder)
    (folder / "walkthrough.sh").write_text(walkthrough() if script is None else script)
    proc = subprocess.Popen(
        ["bash", "walkthrough.sh"], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def _path_with(*tools: str) -> str:
    """A PATH with ``tools`` first, then the venv (bitterbot-node, python3), then the system's."""
    return os.pathsep.join([*tools, str(Path(sys.executable).parent), "/usr/bin", "/bin"])


def _anvil_and_ports() -> str:
    anvil = shutil.which("anvil")
    if anvil is None:
        pytest.skip("anvil is not installed (npm install -g @foundry-rs/anvil, see the README)")
    busy = [port for port in PORTS if _busy(port)]
    if busy:
        pytest.skip(f"the walkthrough's ports {busy} are taken on this machine")
    return anvil


def _walked(folder: Path, result: subprocess.CompletedProcess[str], why: str = "") -> None:
    logs = {node: (folder / node / "node.log").read_text() for node in NODES}
    assert result.returncode == 0, f"{why}{result.stdout[-3000:]}\n{result.stderr[-3000:]}\n{logs['buyer'][-2000:]}"
    out = result.stdout
    assert "verified" in out and "walkthrough drill" in out
    assert "Rotate nginx logs without downtime" in out  # the bought skill, shown from the buyer's memory
    assert re.search(r"earned    0\.\d{6} USDC from 1 sales to 1 buyers", out), out[-2000:]
    for node, log in logs.items():
        assert "Traceback" not in log, f"{node}:\n{log}"
        assert "node.stopped" in log, f"{node} did not stop cleanly:\n{log[-2000:]}"


@pytest.mark.timeout(300)
def test_the_readme_walkthrough_works_as_written(tmp_path: Path) -> None:
    if small_machines.unavailable() is None:
        pytest.skip("run below with each node on a machine of 256 MB and one CPU, which is harder")
    anvil = _anvil_and_ports()
    _walked(tmp_path, _run(tmp_path, _path_with(str(Path(anvil).parent)), timeout=240))


@pytest.mark.timeout(420)
def test_the_readme_walkthrough_works_with_each_node_in_256_mb_and_one_cpu(tmp_path: Path) -> None:
    """Issue 31: a node on a small edge machine. Each node (its daemon, the daemon's embedding
    worker, and the CLI calls naming its data dir) runs in a control group of 256 MB and one CPU,
    as on a machine of its own; anvil and `chain deploy` run outside. The seller embeds its skill
    with MiniLM (its worker started in its group: the node that needs the most); neither edge is
    left with anything to embed."""
    why_not = small_machines.unavailable()
    if why_not:
        pytest.skip(why_not)
    anvil = _anvil_and_ports()
    walk = tmp_path / "walk"
    walk.mkdir()
    real = Path(sys.executable).parent / "bitterbot-node"
    with small_machines.small_machines("walkthrough", MACHINE_MB, 1.0, NODES) as machines:
        tools = machines.wrapper(tmp_path / "bin", real).parent
        result = _run(walk, _path_with(str(tools), str(Path(anvil).parent)), timeout=360)
        usage = {node: machines.usage(node) for node in NODES}
    print(f"each node's peak in its {MACHINE_MB} MB group:", usage)
    _walked(walk, result, f"{usage}\n")
    assert all(u.oom_kills == 0 for u in usage.values()), usage
    for node in ("seller", "buyer"):
        stats = subprocess.run(
            [str(real), "memory", "stats", "--json", "--data-dir", str(walk / node)],
            capture_output=True, text=True, check=True, timeout=100,
        )  # fmt: skip
        embedded = json.loads(stats.stdout)
        assert embedded["total"] >= 1 and embedded["embedding_backlog"] == 0, (node, embedded)


#: The walkthrough's two lines that assume our development token, and what a user of real USDC types
#: instead: the escrow alone, for the token already on the chain; USDC from whoever holds it.
DEPLOY_DEV = 'deploy() { bitterbot-node chain deploy --url http://127.0.0.1:8545 --arbiter "$ARBITER" > chain.toml; }'
FUND_DEV = "bitterbot-node wallet fund 1 --data-dir buyer\n"
BUYER_ADDRESS = """$(bitterbot-node wallet --data-dir buyer --json | json 'd["address"]')"""


def _anvil_holding_usdc(folder: Path) -> tuple[Path, str]:
    """An ``anvil`` for the walkthrough's PATH that starts the real one from a saved state in which
    Circle's FiatToken is already deployed (named "USDC", as on Base): the chain as a user of real
    USDC finds it. Its folder, and the token's address."""
    from web3 import Web3

    from marketplace.fiattoken.anvil import ANVIL, anvil_process
    from marketplace.fiattoken.deploy import deploy_token

    state = folder / "usdc-state.json"
    with anvil_process("--dump-state", str(state)) as url:  # written as anvil stops
        w3 = Web3(Web3.HTTPProvider(url))
        token = deploy_token(w3, w3.eth.accounts[0], name="USDC")
    tools = folder / "bin"
    tools.mkdir()
    (tools / "anvil").write_text(f'#!/bin/sh\nexec {ANVIL} --load-state {state} "$@"\n')
    (tools / "anvil").chmod(0o755)
    return tools, token


@pytest.mark.timeout(300)
def test_the_readme_walkthrough_buys_with_real_usdc(tmp_path: Path) -> None:
    """Issue 49: the walkthrough's purchase on Circle's FiatToken (the code real USDC runs, compiled
    from ../shared/usdc), already on the chain as on a test network. Two lines change, as a user of
    real USDC changes them: `chain deploy --token` deploys only the escrow, and the buyer is paid
    USDC by its minter (a faucet) instead of `wallet fund`; the rest runs as written."""
    from tests.marketplace.conftest import need_fiattoken

    anvil = _anvil_and_ports()
    need_fiattoken()
    tools, token = _anvil_holding_usdc(tmp_path)
    script = walkthrough()
    assert script.count(DEPLOY_DEV) == 1 and script.count(FUND_DEV) == 1, "the walkthrough's deploy or fund line moved"
    script = script.replace(DEPLOY_DEV, DEPLOY_DEV.replace(" > chain.toml", f" --token {token} > chain.toml"))
    faucet = f"python3 -m marketplace.fiattoken.faucet http://127.0.0.1:8545 {token} {BUYER_ADDRESS} 1000000\n"
    script = script.replace(FUND_DEV, faucet)
    assert f"--token {token}" in script and faucet in script and FUND_DEV not in script
    walk = tmp_path / "walk"
    walk.mkdir()
    result = _run(walk, _path_with(str(tools), str(Path(anvil).parent)), timeout=240, script=script)
    _walked(walk, result)
    config = (walk / "buyer" / "config.toml").read_text()
    assert f'token_address = "{token}"' in config and "dev = false" in config and '"USDC"' in config
    assert "was given 1.000000 USDC and gas" in result.stdout


@pytest.mark.timeout(300)
@pytest.mark.parametrize("trouble", ["anvil missing", "port taken", "an earlier run", "a node that cannot start"])
def test_the_walkthrough_fails_fast_and_says_why(tmp_path: Path, trouble: str) -> None:
    """Issue 32: with anvil missing or a port busy its wait loops spun forever with stderr hidden, and
    run again in the same folder it "succeeded" on the old sale."""
    anvil = shutil.which("anvil")
    tools = [str(Path(anvil).parent)] if anvil else []
    if trouble != "anvil missing" and anvil is None:
        pytest.skip("anvil is not installed")
    if trouble != "port taken" and any(_busy(port) for port in PORTS):
        pytest.skip("the walkthrough's ports are taken on this machine")
    expected = {
        "anvil missing": "anvil is not installed: npm install -g @foundry-rs/anvil",
        "port taken": "port 4102 is taken",
        "an earlier run": "run it in an empty folder",
        "a node that cannot start": "the seller daemon exited",
    }[trouble]
    walk = tmp_path / "walk"
    walk.mkdir()
    listener = socket.socket()
    try:
        if trouble == "anvil missing":
            tools = []
        elif trouble == "port taken":
            # the walkthrough run before this one leaves its connections on 4102 in TIME_WAIT, which
            # refuses a plain bind for a minute; a listener is what the walkthrough must see
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", 4102))
            listener.listen()
        elif trouble == "an earlier run":
            (walk / "buyer").mkdir()
        else:  # the seller's daemon exits at once: the wait for its connection says so, with its log
            fake = tmp_path / "bin"
            fake.mkdir()
            (fake / "bitterbot-node").write_text(
                f'#!/bin/sh\n[ "$1 $3" = "run seller" ] && {{ echo "seller refuses to start" >&2; exit 2; }}\n'
                f'exec {Path(sys.executable).parent / "bitterbot-node"} "$@"\n'
            )
            (fake / "bitterbot-node").chmod(0o755)
            tools = [str(fake), *tools]
        result = _run(walk, _path_with(*tools), timeout=240)
    finally:
        listener.close()
    assert result.returncode == 1, (result.stdout[-2000:], result.stderr[-2000:])
    assert expected in result.stderr, result.stderr[-2000:]
    if trouble == "a node that cannot start":
        assert "--- end of seller/node.log" in result.stderr and "seller refuses to start" in result.stderr
    for port in PORTS:  # nothing it started is left running
        assert not _busy(port) or trouble == "port taken"
