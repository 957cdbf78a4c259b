"""What a neighbour's peer exchange may make this node dial and keep (issue 48): no address on a
network the node is not on (private, link-local, loopback when it does not listen there, multicast),
at most ``peers_per_source`` peers per neighbour, and across a restart only what a handshake proved."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from p2p.host import P2PHost
from p2p.network.discovery import PROTOCOL, KnownPeer, PeerDiscovery, PeerStore, proven_addrs
from p2p.network.scope import LocalNetworks, may_dial
from p2p.network.settings import LOOPBACK, DiscoverySettings, HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator

LAN = LocalNetworks.of(
    [("192.168.5.2", "255.255.255.0"), ("fd00::2", "ffff:ffff:ffff:ffff::")], ["/ip4/192.168.5.2/tcp/1"]
)


@pytest.mark.parametrize(
    ("addr", "dialled"),
    [
        ("/ip4/100.64.1.1/tcp/4001", True),  # public (carrier space counts as public here)
        ("/ip4/8.8.8.8/tcp/4001", True),
        ("/ip4/192.168.5.9/tcp/4001", True),  # on this node's own LAN
        ("/ip6/fd00::9/tcp/4001", True),
        ("/ip4/192.168.77.1/tcp/22", False),  # someone else's LAN
        ("/ip4/10.0.0.1/tcp/80", False),
        ("/ip4/169.254.169.254/tcp/80", False),  # link-local: the cloud metadata service
        ("/ip4/127.0.0.1/tcp/8080", False),  # this node does not listen on loopback
        ("/ip6/::ffff:127.0.0.1/tcp/8080", False),
        ("/ip4/224.0.0.251/tcp/5353", False),
        ("/dns4/router.lan/tcp/80", False),
        ("/ip4/0.0.0.0/tcp/1", False),
    ],
)
def test_an_address_is_dialled_only_where_the_node_is_on_that_network(addr: str, dialled: bool) -> None:
    assert may_dial(addr, LAN) is dialled


def test_loopback_is_dialled_by_a_node_that_listens_on_loopback() -> None:
    on_loopback = LocalNetworks.of([("127.0.0.1", "255.0.0.0")], ["/ip4/127.0.0.1/tcp/4001"])
    assert may_dial("/ip4/127.0.0.1/tcp/4002", on_loopback)


def test_heard_peers_are_bounded_per_source_and_only_proven_ones_are_saved(tmp_path: Path) -> None:
    store = PeerStore(tmp_path / "peers.json", size=1_000, per_source=4)
    store.hear("loud", [KnownPeer(f"peer-{i:04d}-xxxxxxxx", ("/ip4/8.8.8.8/tcp/9",), i) for i in range(30)])
    store.hear("quiet", [KnownPeer("peer-quiet-xxxxxxxx", ("/ip4/8.8.4.4/tcp/9",), 1)])
    assert store.heard_from("loud") == 4 and store.heard_from("quiet") == 1
    assert {p.peer_id for p in store.candidates(set(), 100)} >= {"peer-0029-xxxxxxxx", "peer-quiet-xxxxxxxx"}
    store.learn([KnownPeer("peer-quiet-xxxxxxxx", ("/ip4/8.8.4.4/tcp/9",), 2)])  # a handshake proved it
    store.save()
    kept = json.loads((tmp_path / "peers.json").read_text())["peers"]
    assert [p["peer_id"] for p in kept] == ["peer-quiet-xxxxxxxx"]


def test_a_connected_peer_is_kept_only_at_addresses_on_the_ip_it_connected_from() -> None:
    claimed = ("/ip4/127.0.0.1/tcp/4001", "/ip4/192.168.77.1/tcp/22", "/ip4/8.8.8.8/tcp/4001")
    assert proven_addrs(claimed, ("/ip4/127.0.0.1/tcp/53211",)) == ("/ip4/127.0.0.1/tcp/4001",)
    assert proven_addrs(claimed, ()) == ()  # relayed only: nothing proven


def _foreign_private_ip() -> str:
    """A private IPv4 address on none of this machine's networks."""
    mine = [
        ipaddress.ip_network(f"{e.address}/{e.netmask}", strict=False)
        for entries in psutil.net_if_addrs().values()
        for e in entries
        if e.family.name == "AF_INET" and e.netmask
    ]
    for third in range(200, 256):
        candidate = ipaddress.ip_address(f"10.254.{third}.7")
        if not any(candidate in net for net in mine):
            return str(candidate)
    raise AssertionError("every 10.254.x network is this machine's")


def _host(settings: HostSettings) -> P2PHost:
    return P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), settings)


@pytest.mark.slow  # real hosts
async def test_a_hostile_neighbour_cannot_make_the_node_dial_or_keep_addresses_off_its_networks(
    tmp_path: Path,
) -> None:
    stranger_lan = _foreign_private_ip()
    hostile = [
        ("12D3KooWLanScanAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", f"/ip4/{stranger_lan}/tcp/22"),
        ("12D3KooWMetadataBbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "/ip4/169.254.169.254/tcp/80"),
        ("12D3KooWMulticastCcccccccccccccccccccccccccccccccccccc", "/ip4/224.0.0.251/tcp/5353"),
    ]
    gone = ("12D3KooWGoneDdddddddddddddddddddddddddddddddddddddddd", "/ip4/127.0.0.1/tcp/1")  # in scope, never up
    answer = json.dumps({"peers": [{"peer_id": p, "addrs": [a]} for p, a in [*hostile, gone]]}).encode()

    async def tell(_asker: str, _request: bytes) -> bytes:
        return answer

    neighbour = _host(HostSettings(listen=LOOPBACK))
    neighbour.serve(PROTOCOL, tell)
    await neighbour.start()
    node = _host(HostSettings(listen=LOOPBACK, bootstrap=[f"{neighbour.listen_addrs[0]}/p2p/{neighbour.peer_id}"]))
    store = PeerStore(tmp_path / "peers.json", size=100)
    discovery = PeerDiscovery(node, DiscoverySettings(target_peers=2), store, me=node.peer_id, dial_timeout_s=2)
    try:
        await node.start()
        async with asyncio.timeout(30):  # a bound on a hung dial, not a time to meet
            while neighbour.peer_id not in {s.peer_id for s in await node.peers()}:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        await discovery.round()  # asks the neighbour, dials what it may, saves
    finally:
        await node.stop()
        await neighbour.stop()
    told = {addr for peer in store.candidates(set(), 100) for addr in peer.addrs}
    assert not told & {a for _, a in hostile}
    assert gone[1] in told  # loopback, where this node listens: dialled (and refused)
    kept = {p["peer_id"] for p in json.loads((tmp_path / "peers.json").read_text())["peers"]}
    assert kept == {neighbour.peer_id}  # the only address a handshake proved
