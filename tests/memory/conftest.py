from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.embedders.hashing import HashingEmbedder
from memory.graph import auto_link
from memory.store import MemoryStore

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
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path, clock: FakeClock) -> AsyncIterator[MemoryStore]:
    s = await MemoryStore.open(tmp_path / "memory.db", HashingEmbedder(), now_ms=clock, on_embedded=auto_link)
    try:
        yield s
    finally:
        await s.close()
