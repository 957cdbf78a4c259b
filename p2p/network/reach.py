"""Reaching a peer that is not connected (trio side): its own addresses, and a relay beside them.

A peer behind a NAT advertises addresses nobody outside can dial: its LAN address, and the address
its NAT gave the connection a relay saw. A NAT that drops what it did not ask for (most home
routers) answers neither, so a dial to them only times out: tried first and alone, it spent the
whole of a purchase's 15 s before the relay was tried. As go-libp2p ranks its dials, the circuit
through a relay starts ``RELAY_HEAD_START_S`` after the direct dial (or as soon as that fails),
beside it, and the first to connect wins; the other is cancelled. A peer that is reachable wins
directly within the head start.
"""

from __future__ import annotations

from typing import Any

import trio

from p2p.errors import PeerUnreachable
from p2p.network.relay import Traversal

#: go-libp2p's delay of relay dials behind direct ones: a reachable peer answers well within it.
RELAY_HEAD_START_S = 0.5
#: How long a direct dial may take when no relay wins first.
DIRECT_DIAL_S = 10.0


async def reach(host: Any, traversal: Traversal | None, peer: Any) -> None:
    """Connect to ``peer`` (a libp2p ``ID``) directly or through a relay, whichever connects first;
    ``ConnectionError`` when neither does."""
    from libp2p.peer.peerinfo import PeerInfo

    direct_addrs = [a for a in _known_addrs(host, peer) if "/p2p-circuit" not in str(a)]
    connected = False
    failures: list[str] = []
    direct_over = trio.Event()  # the relay need not wait out its head start behind a refused dial

    async with trio.open_nursery() as nursery:

        async def direct() -> None:
            nonlocal connected
            try:
                with trio.fail_after(DIRECT_DIAL_S):
                    await host.connect(PeerInfo(peer, direct_addrs))
            except Exception as exc:  # noqa: BLE001 - refused, unreachable or timed out: the relay may still win
                failures.append(f"directly: {exc}")
                return
            finally:
                direct_over.set()
            connected = True
            nursery.cancel_scope.cancel()

        async def relayed() -> None:
            nonlocal connected
            if traversal is None:
                return
            if direct_addrs:
                with trio.move_on_after(RELAY_HEAD_START_S):
                    await direct_over.wait()
            if await traversal.dial_through_relays(peer):
                connected = True
                nursery.cancel_scope.cancel()
            else:
                failures.append("through a relay: none would or could")

        if direct_addrs:
            nursery.start_soon(direct)
        nursery.start_soon(relayed)
    if not connected:
        raise PeerUnreachable(f"cannot reach {peer}: " + "; ".join(failures or ["no address known"]))


def _known_addrs(host: Any, peer: Any) -> list[Any]:
    """Where ``peer`` listens, as far as this host knows; none for a peer known only by its id (the
    peer store raises for it), which a relay may still reach."""
    from libp2p.peer.peerstore import PeerStoreError

    try:
        return list(host.get_peerstore().addrs(peer))
    except PeerStoreError:
        return []
