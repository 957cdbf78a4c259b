from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from marketplace.chain import Chain


@pytest.fixture
async def chain() -> AsyncIterator[Chain]:
    """A fresh embedded chain with our contracts deployed."""
    c = await Chain.embedded()
    try:
        yield c
    finally:
        await c.close()
