from __future__ import annotations

import threading
from collections.abc import Iterator
from socketserver import BaseServer
from typing import TypeVar

import pytest

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
