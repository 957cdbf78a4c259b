"""Hole punching a stranger cannot aim (issue 48, ``p2p.network.punch``): over a relay, a peer's DCUtR
CONNECT makes this node dial public addresses only, at most 8, a few times per peer. The last test
plays the stranger with real hosts on loopback: its CONNECT names a service on this machine, which
the node, before the fix, dialled from its listen port."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import multiaddr
import pytest

from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from p2p.host import P2PHost
from p2p.network.punch import (
    MAX_PUNCH_ADDRS,
    PUNCH_WINDOW_S,
    PUNCHES_PER_PEER,
    PunchBudget,
    Told,
    opens_punch,
    punch_targets,
)
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator

ECHO = "/bitterbot/test-echo/1"


def test_a_punch_dials_public_addresses_only_and_at_most_eight() -> None:
    offered = [
        "/ip4/192.168.1.1/tcp/22",
        "/ip4/127.0.0.1/tcp/8080",
        "/ip4/169.254.169.254/tcp/80",
        "/ip4/224.0.0.1/tcp/1",
        *(f"/ip4/100.64.0.{i}/tcp/4001" for i in range(1, 21)),
    ]
    targets = punch_targets(offered, ["/ip4/100.64.9.9/tcp/4001"])
    assert targets == [f"/ip4/100.64.0.{i}/tcp/4001" for i in range(1, MAX_PUNCH_ADDRS + 1)]
    assert punch_targets([], ["/ip4/100.64.9.9/tcp/4001", "/ip4/10.0.0.1/tcp/1"]) == ["/ip4/100.64.9.9/tcp/4001"]


def test_a_peer_gets_a_few_punches_per_window() -> None:
    budget = PunchBudget()
    assert [budget.allow("stranger", 0.0) for _ in range(PUNCHES_PER_PEER + 2)] == [True] * PUNCHES_PER_PEER + [
        False,
        False,
    ]
    assert budget.allow("another", 1.0)
    assert budget.allow("stranger", PUNCH_WINDOW_S + 0.5)


def test_the_end_a_relayed_connection_came_in_to_opens_the_punch_and_both_ends_agree() -> None:
    a, b = "12D3KooWA", "12D3KooWB"
    # a dialled b through a relay: at a the connection is outbound, at b inbound; b opens
    assert (opens_punch(["outbound"], a, b), opens_punch(["inbound"], b, a)) == (False, True)
    # each dialled the other through a relay, or no direction is known: the peer id sorting first opens
    for directions in (["inbound", "outbound"], ["unknown"], []):
        assert (opens_punch(directions, a, b), opens_punch(directions, b, a)) == (True, False)


def test_a_failed_punch_is_told_once_per_peer_and_again_after_one_landed() -> None:
    told = Told(peers=2)
    assert [told.first("p"), told.first("p"), told.first("q")] == [True, False, True]
    told.forget("p")  # its punch landed: a later failure is news
    assert told.first("p")
    told.first("r")  # past the bound the oldest goes first
    assert told.first("q")


def _host(settings: HostSettings) -> P2PHost:
    return P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), settings)


async def _aimed_punch(stranger: P2PHost, node_id: str, aim: str) -> None:
    """On the stranger's libp2p thread: a DCUtR CONNECT naming ``aim``, the SYNC, then wait until the
    node closes the stream (its punch is over)."""
    from libp2p.peer.id import ID
    from libp2p.relay.circuit_v2.dcutr import PROTOCOL_ID, read_dcutr_msg
    from libp2p.relay.circuit_v2.pb.dcutr_pb2 import HolePunch
    from libp2p.relay.circuit_v2.utils import write_delimited_msg

    async def punch() -> None:
        host: Any = stranger._host  # the stranger plays DCUtR by hand: no library helper sends a chosen CONNECT
        stream = await host.new_stream(ID.from_base58(node_id), [PROTOCOL_ID])
        connect = HolePunch(type=HolePunch.CONNECT, ObsAddrs=[multiaddr.Multiaddr(aim).to_bytes()])
        await write_delimited_msg(stream, connect)
        await read_dcutr_msg(stream, HolePunch)  # the node's CONNECT
        await write_delimited_msg(stream, HolePunch(type=HolePunch.SYNC))
        try:
            while await stream.read(1024):
                pass
        except Exception:  # closed or reset: either way the node is done
            pass

    await stranger._call(punch)


@pytest.mark.slow  # real hosts
async def test_a_strangers_connect_over_a_relay_cannot_aim_the_node_at_its_own_machine() -> None:
    relay = _host(HostSettings(listen=LOOPBACK, relay_service=True, reachability="public"))
    await relay.start()
    relay_addr = relay.listen_addrs[0]
    node = _host(HostSettings(listen=LOOPBACK, bootstrap=[relay_addr], reachability="private"))

    async def echo(_peer: str, request: bytes) -> bytes:
        return request

    node.serve(ECHO, echo)
    # One connection per peer: the relayed one stays the stranger's only one to the node, as a NAT would
    # keep it, and no direct dial of either (to or from its loopback listener) ends the session first.
    lone = HostSettings(listen=LOOPBACK, bootstrap=[relay_addr], reachability="private", connections_per_peer=1)
    stranger = _host(lone)
    with socket.socket() as service:  # a service on the node's own machine, which counts who connects
        service.bind(("127.0.0.1", 0))
        service.listen(8)
        service.setblocking(False)
        aim = f"/ip4/127.0.0.1/tcp/{service.getsockname()[1]}"
        try:
            await node.start()
            await stranger.start()
            async with asyncio.timeout(120):  # a bound on a hang, not a time to meet
                while relay.peer_id not in node.traversal().get("reserved_on", []):  # noqa: ASYNC110
                    await asyncio.sleep(0.1)
                # all it knows of the node is a refused address: it reaches the node through the relay
                await stranger.remember_addrs(node.peer_id, [f"/ip4/127.0.0.1/tcp/1/p2p/{node.peer_id}"])
                assert await stranger.request(node.peer_id, ECHO, b"hi") == b"hi"
                await _aimed_punch(stranger, node.peer_id, aim)
        finally:
            for host in (stranger, node, relay):
                await host.stop()
        with pytest.raises(BlockingIOError):
            service.accept()  # nobody came
