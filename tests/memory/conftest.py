from __future__ import annotations

import pytest

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
