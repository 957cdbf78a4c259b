from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from socketserver import BaseServer
from typing import TypeVar

import pytest

from memory.embedders import make_embedder
from memory.embedders.base import Embedder
from memory.intake.store import IntakeStore

S = TypeVar("S", bound=BaseServer)


def serving(server: S) -> Iterator[S]:
    """Serve ``server`` (a local HTTP fake) on a thread for a fixture's duration, then stop it."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class FakeClock:
    """An injected clock: tests move time instead of sleeping."""

    def __init__(self, now_ms: int = T0) -> None:
        self.now = now_ms

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> FakeClock:
    """Overrides the root conftest's wall clock: memory tests move time instead of sleeping."""
    return FakeClock()


class FakeModelServer(ThreadingHTTPServer):
    """A named fake of a remote chat model: answers what ``answer`` says (or fails as told)."""

    answer = '{"type": "goal", "confidence": 0.93}'
    mode = "ok"
    asked: list[str]


class FakeModelHandler(BaseHTTPRequestHandler):
    server: FakeModelServer

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.asked.append(body["messages"][-1]["content"])
        if self.server.mode == "error":
            self.send_response(503)
            self.end_headers()
            return
        if self.server.mode == "slow":
            time.sleep(1.0)
        payload = json.dumps({"choices": [{"message": {"content": self.server.answer}}]}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except BrokenPipeError:
            pass


@pytest.fixture
def model() -> Iterator[FakeModelServer]:
    server = FakeModelServer(("127.0.0.1", 0), FakeModelHandler)
    server.asked = []
    yield from serving(server)


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    """The default embedder, loaded once per module (its similarities are what supersession's
    thresholds were set on)."""
    return make_embedder("minilm")


@pytest.fixture
async def memory(tmp_path: Path, clock: FakeClock, minilm: Embedder) -> AsyncIterator[IntakeStore]:
    """A store with MiniLM and supersession on save, on a fake clock."""
    from memory.supersession.detect import Supersession

    store = await IntakeStore.open(tmp_path / "m.db", minilm, now_ms=clock, on_embedded=Supersession().hook())
    try:
        yield store
    finally:
        await store.close()
