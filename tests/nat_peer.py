"""One real ``P2PHost`` in a process of its own, driven line by line: what the NAT tests run inside a
network namespace (``python -m tests.nat_peer SETTINGS_JSON``, under ``ip netns exec``).

Each line on stdin is a JSON request; each answer is one JSON line on stdout, ``{"ok": ...}`` or
``{"error": "..."}``:
- ``{"op": "id"}``: its peer id and the addresses it tells;
- ``{"op": "traversal"}``: reachability, reservations and hole punches (``P2PHost.traversal``);
- ``{"op": "peers"}``: each connected peer, whether every connection to it is relayed, and the far
  ends of its direct connections;
- ``{"op": "ask", "peer": ID}``: one request to ``peer`` on ``WHERE``, reaching it directly or
  through a relay as any request does; the answer names the connection the request came over, as
  the peer saw it: a ``/p2p-circuit`` address through a relay, the far end's IP and port when direct;
- ``{"op": "punch", "peer": ID}``: have this end open a hole punch to ``peer`` now, as the library's
  loop does within 2 s of seeing a relayed connection (an end that does not open punches declines).
The host answers ``WHERE`` itself. Its log (py-libp2p at info, hole punching at debug) goes to stderr.
``NatPeer`` starts one and asks it, from the test.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from p2p.framing import read_frame, write_frame
from p2p.host import P2PHost
from p2p.network.dcutr import LIBRARY_LOGGER
from p2p.network.settings import HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator

WHERE = "/bitterbot/test-where/1"


class NatPeer:
    """A ``P2PHost`` process started under ``inside`` (a namespace's command prefix) with ``settings``
    (``HostSettings`` fields), asked through its stdin; ``stop`` ends it and returns its log."""

    def __init__(self, inside: list[str], settings: dict[str, Any], name: str) -> None:
        self.name = name
        self._log: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed in stop()
        self._proc = subprocess.Popen(
            [*inside, sys.executable, "-m", "tests.nat_peer", json.dumps(settings)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])),  # this checkout's code
        )  # fmt: skip

    def ask(self, timeout_s: float = 60, **request: Any) -> Any:
        """The answer to ``request`` (``{"op": ...}``); AssertionError on an error or no answer in time."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout_s)
        line = self._proc.stdout.readline() if ready else ""
        assert line, f"{self.name} gave no answer to {request} within {timeout_s} s:\n{self.log()[-3000:]}"
        answer = json.loads(line)
        assert "ok" in answer, f"{self.name}: {request} -> {answer['error']}"
        return answer["ok"]

    def log(self) -> str:
        self._log.flush()
        self._log.seek(0)
        return self._log.read()

    def stop(self) -> str:
        """End the process (closing its stdin stops the host; killed if it lingers) and return its log."""
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        text = self.log()
        self._log.close()
        return text


async def _serve_where(host: P2PHost) -> None:
    """On the libp2p thread: answer ``WHERE`` with the transport addresses of the stream's own
    connection (a request handler of ``P2PHost.serve`` is told only the peer, not the connection)."""
    from libp2p.custom_types import TProtocol

    library: Any = host._host  # the test reads which connection carried a stream: no public call says

    async def where(stream: Any) -> None:
        try:
            await read_frame(stream)
            peer = stream.muxed_conn.peer_id
            carrying = [c for c in library.get_network().get_connections(peer) if c.muxed_conn is stream.muxed_conn]
            came_over = [str(a) for c in carrying for a in c.get_transport_addresses()]
            await write_frame(stream, json.dumps({"came_over": came_over}).encode())
        finally:
            await stream.close()

    library.set_stream_handler(TProtocol(WHERE), where)


async def _punch(host: P2PHost, peer: str) -> bool:
    from libp2p.peer.id import ID

    dcutr: Any = host._traversal._dcutr  # type: ignore[union-attr]  # the test starts a punch the loop would

    async def punch() -> bool:
        return bool(await dcutr.initiate_hole_punch(ID.from_base58(peer)))

    return await host._call(punch)


async def _answer(host: P2PHost, request: dict[str, Any]) -> Any:
    op = request["op"]
    if op == "id":
        return {"peer_id": host.peer_id, "addrs": host.dialable_addrs()}
    if op == "traversal":
        return host.traversal()
    if op == "peers":
        return [{"peer_id": p.peer_id, "relayed": p.relayed, "seen_at": list(p.seen_at)} for p in await host.peers()]
    if op == "ask":
        return json.loads(await host.request(request["peer"], WHERE, b"where", timeout_s=30))
    if op == "punch":
        return await _punch(host, request["peer"])
    raise KeyError(f"no op {op!r}")


async def main(settings: HostSettings) -> None:
    host = P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), settings)
    await host.start()
    await host._call(lambda: _serve_where(host))
    libp2p = logging.getLogger("libp2p")  # py-libp2p turns its propagation off when imported
    libp2p.propagate = True
    libp2p.setLevel(logging.INFO)
    logging.getLogger(LIBRARY_LOGGER).setLevel(logging.DEBUG)
    loop = asyncio.get_running_loop()
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            try:
                out = {"ok": await _answer(host, json.loads(line))}
            except Exception as exc:  # the test reads a failure as an answer
                out = {"error": f"{type(exc).__name__}: {exc}"}
            print(json.dumps(out), flush=True)
    finally:
        await host.stop()


class _WithFields(logging.Formatter):
    """Our events carry their fields beside the message (``ground.events``): written after it."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        return super().format(record) + (f" {json.dumps(fields, default=str)}" if fields else "")


if __name__ == "__main__":
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_WithFields("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    asyncio.run(main(HostSettings.model_validate_json(sys.argv[1])))
