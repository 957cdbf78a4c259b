"""py-libp2p's pubsub, with a peer's teardown that survives the peer going away meanwhile.

A ban here blacklists the peer (the library then resets its stream and removes it) and also closes
its connection. When the connection closes while the stream reset is awaited, the library's own
handler removes the peer first, and the teardown's ``del`` raised ``KeyError``: that stopped the
whole libp2p service, so one banned peer took the node's gossip down (seen in ``bench p2p``).
Imported only on the libp2p thread, where the library is loaded (``p2p.host``)."""

from __future__ import annotations

import contextlib
from typing import Any

from libp2p.pubsub.pubsub import Pubsub


class TolerantPubsub(Pubsub):
    async def _teardown_if_connected(self, peer_id: Any) -> None:
        """Reset the peer's stream and forget it, whether or not it is still there afterwards."""
        stream = self.peers.get(peer_id)
        if stream is not None:
            with contextlib.suppress(Exception):  # a stream already gone is what we wanted
                await stream.reset()
            self.peers.pop(peer_id, None)  # the connection's own handler may have removed it
        self._forget_all_subscriptions(peer_id)
