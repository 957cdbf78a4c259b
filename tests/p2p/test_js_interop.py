"""An independent js-libp2p peer (`tests/interop/js/peer.mjs`: js-libp2p's own TCP, noise, yamux,
identify and gossipsub) and a real daemon, both ways: the node's signed weather reaches the js peer
and verifies there as the node's own; what the js peer publishes (300 KB on one stream, past yamux's
256 KB window, so the node must give credit back) reaches the node, which judges and refuses it.

Skips, saying why, where Node.js or the peer's packages are missing (`.ci/run` installs them with
`npm install --prefix tests/interop/js`, exact versions from its lock file)."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from crypto.envelope import decode_envelope, verify_signature
from p2p.weather import KIND_WEATHER, WEATHER
from tests.conftest import clean_env
from tests.daemons import management_node, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PEER = Path(__file__).resolve().parents[1] / "interop" / "js"
LIFETIME_MS = 120_000


def _why_not() -> str | None:
    if shutil.which("node") is None:
        return "Node.js is not installed"
    if not (PEER / "node_modules" / "libp2p").is_dir():
        return f"the js peer's packages are not installed (npm install --prefix {PEER})"
    return None


class JsPeer:
    """The js peer's process; its JSON lines in a queue, read by a thread so that waits are bounded."""

    def __init__(self, address: str) -> None:
        self.proc = subprocess.Popen(
            ["node", "peer.mjs", address, str(LIFETIME_MS)],
            cwd=PEER, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.waiting: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.lines.put(json.loads(line))

    def next(self, event: str, timeout_s: float = 60) -> dict[str, Any]:
        """The first line of ``event`` not yet taken (lines of other events wait for their turn), or a
        failure with the peer's stderr."""
        while True:
            for line in self.waiting:
                if line["event"] == event:
                    self.waiting.remove(line)
                    return line
            try:
                self.waiting.append(self.lines.get(timeout=timeout_s))
            except queue.Empty:
                self.proc.kill()
                _, err = self.proc.communicate()
                raise AssertionError(f"the js peer never said {event!r}; its stderr ends:\n{err[-2000:]}") from None

    def stop(self) -> None:
        self.proc.kill()
        self.proc.communicate()


def test_a_js_libp2p_peer_and_the_node_gossip_both_ways(tmp_path: Path) -> None:
    if (why := _why_not()) is not None:
        pytest.skip(why)
    manager, trust = management_node(
        tmp_path, clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__TARGET_PEERS="0")
    )
    key = json.loads(trust["BITTERBOT_TRUST__MANAGEMENT_KEYS"])[0]
    manager.start()
    peer: JsPeer | None = None
    try:
        peer = JsPeer(manager.address())
        peer.next("subscribed")  # the node's subscriptions reached it over gossipsub

        sent = manager.cli("weather", "broadcast", "--level", "0.7", "--duration", "5m", "--reason", "js interop")
        assert sent.returncode == 0, sent.stderr
        while (message := peer.next("message"))["topic"] != "bitterbot/weather/1":
            pass
        envelope = decode_envelope(bytes.fromhex(message["hex"]), kinds={KIND_WEATHER})
        verify_signature(envelope)  # the bytes the js peer got are the node's, signed by its key
        assert envelope.author.hex() == key
        assert WEATHER.parse(envelope.body_map()).reason == "js interop"

        assert peer.next("published")["recipients"] == [1, 1, 1, 1]
        judged = wait_for(
            lambda: (
                (m := manager.json("status")["daemon"]["details"]["p2p"]["messages"].get("bitterbot/skills/1", {}))
                and m.get("too_large", 0) + m.get("malformed", 0) == 4
                and m
            ),
            60,
            "the node to judge the js peer's four messages",
            [manager],
        )
        assert judged == {"too_large": 3, "malformed": 1}
    finally:
        if peer is not None:
            peer.stop()
        log = manager.stop()
    assert "Traceback" not in log, log
