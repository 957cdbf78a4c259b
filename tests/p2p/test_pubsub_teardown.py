"""A banned peer's teardown when its connection closes while its stream is being reset: the race
that stopped the whole libp2p service (``bench p2p``: KeyError in the library's ``del self.peers[...]``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from libp2p.pubsub.pubsub import Pubsub

from p2p.pubsub_teardown import TolerantPubsub


class _Racing:
    """Just what the teardown touches: ``peers``, and subscriptions to forget. Resetting the stream
    lets the connection's own handler remove the peer first, as a closing connection does."""

    def __init__(self) -> None:
        self.peers: dict[str, Any] = {}
        self.forgotten: list[str] = []
        self.peers["p"] = self._stream("p")

    def _stream(self, peer: str) -> Any:
        owner = self

        class Stream:
            async def reset(self) -> None:
                await asyncio.sleep(0)
                owner.peers.pop(peer, None)  # the connection closed meanwhile

        return Stream()

    def _forget_all_subscriptions(self, peer: str) -> None:
        self.forgotten.append(peer)


def test_the_librarys_teardown_fails_on_the_race() -> None:
    with pytest.raises(KeyError):  # what stopped the service: the reason for TolerantPubsub
        asyncio.run(Pubsub._teardown_if_connected(_Racing(), "p"))  # type: ignore[arg-type]


def test_a_peer_gone_during_its_teardown_is_forgotten_without_an_error() -> None:
    racing = _Racing()
    asyncio.run(TolerantPubsub._teardown_if_connected(racing, "p"))  # type: ignore[arg-type]
    assert racing.peers == {} and racing.forgotten == ["p"]
