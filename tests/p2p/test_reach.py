"""Dial ranking with real hosts (``p2p.network.reach``): a peer whose direct address drops every
connection attempt, as a home router drops what it did not ask for, is reached through its relay
while the direct dial still waits, not after that dial gives up.

The dropping address is a listening socket whose accept queue is full: Linux then drops each new
SYN unanswered, so a dial to it waits out its whole timeout (``DIRECT_DIAL_S``, also py-libp2p's
own), as through a NAT. The request is given less than that: before the ranking (the relay tried
only once the direct dial failed) it timed out; with it, the relay starts 0.5 s in and answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator

import pytest

from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from p2p.host import P2PHost
from p2p.network.reach import DIRECT_DIAL_S
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator

pytestmark = pytest.mark.slow  # real hosts

ECHO = "/bitterbot/test-echo/1"


@contextlib.contextmanager
def dropping_address() -> Iterator[str]:
    """A TCP address on 127.0.0.1 that answers no connection attempt while this lasts."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)  # an accept queue of one, never accepted from
        port = listener.getsockname()[1]
        waiting = []
        try:
            for _ in range(4):  # fill the queue; attempts past it stay unanswered (non-blocking)
                client = socket.socket()
                client.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    client.connect(("127.0.0.1", port))
                waiting.append(client)
            yield f"/ip4/127.0.0.1/tcp/{port}"
        finally:
            for client in waiting:
                client.close()


def _host(settings: HostSettings) -> P2PHost:
    return P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), settings)


@contextlib.asynccontextmanager
async def relayed_pair() -> AsyncIterator[tuple[P2PHost, P2PHost]]:
    """A public relay, a private target holding a slot on it and answering ``ECHO``, and a private
    caller that knows the relay: (caller, target), once the target's reservation is held."""
    relay = _host(HostSettings(listen=LOOPBACK, relay_service=True, reachability="public"))
    await relay.start()
    relay_addr = f"{relay.listen_addrs[0]}"
    target = _host(HostSettings(listen=LOOPBACK, bootstrap=[relay_addr], reachability="private"))

    async def echo(peer: str, request: bytes) -> bytes:
        return b"echo:" + request

    target.serve(ECHO, echo)
    caller = _host(HostSettings(listen=LOOPBACK, bootstrap=[relay_addr], reachability="private"))
    try:
        await target.start()
        await caller.start()
        async with asyncio.timeout(60):  # a bound on a hung reservation, not a time to meet
            while relay.peer_id not in target.traversal().get("reserved_on", []):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        yield caller, target
    finally:
        for host in (caller, target, relay):
            await host.stop()


async def test_a_peer_whose_direct_address_drops_is_reached_through_its_relay_before_that_dial_ends() -> None:
    async with relayed_pair() as (caller, target):
        with dropping_address() as nowhere:
            await caller.remember_addrs(target.peer_id, [f"{nowhere}/p2p/{target.peer_id}"])
            # The one address of the target the caller knows drops: an answer before the direct dial's
            # timeout came through the relay. (Whether the connection is still relayed afterwards is
            # not asked: over it, both ends may punch through to a direct one, as on loopback they do.)
            answer = await caller.request(target.peer_id, ECHO, b"hello", timeout_s=DIRECT_DIAL_S - 1)
        assert answer == b"echo:hello"


async def test_a_peer_known_only_by_its_id_is_reached_through_a_relay() -> None:
    """A peer the caller has no address of (a device paired by its id, say) is asked through the
    relay; the peer store's "peer ID not found" failed the request before any relay was tried."""
    async with relayed_pair() as (caller, target):
        assert await caller.request(target.peer_id, ECHO, b"hello", timeout_s=30) == b"echo:hello"
