"""The bounds on what a remote peer may hold of a node (p2p.network.bounds and .resources): the per-IP
count, the per-peer stream count and open rate, and the library config made from any valid bounds."""

from __future__ import annotations

import os

import multiaddr
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from bench.network.connection_flood import open_raw_stream
from node.config_loading import load_config
from node.errors import ConfigError
from p2p.network.bounds import ConnectionBounds, address_key
from p2p.network.resources import BoundedResources, PerAddressLimiter, connection_config


def test_an_ipv4_address_counts_alone_and_an_ipv6_host_counts_by_its_64() -> None:
    assert address_key("203.0.113.7") == "203.0.113.7"
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("not an address") is None


def test_one_address_holds_at_most_its_bound_and_gets_room_back_as_connections_end() -> None:
    limiter = PerAddressLimiter(limit=3)
    assert all(limiter.acquire("198.51.100.1") for _ in range(3))
    assert not limiter.allow("198.51.100.1") and not limiter.acquire("198.51.100.1") and limiter.refused
    assert limiter.acquire("198.51.100.2")  # another address is not touched
    # A handshake that finishes takes its second scope before the first goes: one over, for that moment.
    limiter.upgrading = True
    assert limiter.acquire("198.51.100.1")
    limiter.upgrading = False
    limiter.release("198.51.100.1")
    limiter.release("198.51.100.1")
    assert limiter.acquire("198.51.100.1")
    for _ in range(10):
        limiter.release("198.51.100.1")
        limiter.release("198.51.100.2")
    assert limiter.addresses() == 0  # what a map keeps is only the addresses that hold connections


@given(
    max_connections=st.integers(8, 100_000),
    inbound_share=st.floats(0, 1),
    per_peer=st.integers(1, 64),
    handshake_s=st.floats(1, 120),
)
def test_any_bounds_the_config_accepts_make_a_connection_config_the_library_accepts(
    max_connections: int, inbound_share: float, per_peer: int, handshake_s: float
) -> None:
    """Found by a flood test run with the library's own numbers: 1,000 connections with 250 inbound
    left 750 for dials, above the auto-dialer's low watermark, and the library refused to start."""
    inbound = max(1, round(max_connections * inbound_share))
    bounds = ConnectionBounds(max_connections=max_connections, max_inbound_connections=inbound,
                              connections_per_peer=per_peer,
                              handshake_s=handshake_s)  # fmt: skip
    config = connection_config(bounds)
    assert config.max_connections - config.min_connections == inbound


def test_more_inbound_connections_than_connections_is_a_config_error() -> None:
    variables = {"BITTERBOT_P2P__MAX_CONNECTIONS": "16", "BITTERBOT_P2P__MAX_INBOUND_CONNECTIONS": "17"}
    with pytest.raises(ConfigError, match="need max_inbound_connections <= max_connections"):
        load_config(None, variables)


@pytest.mark.slow  # two real libp2p hosts
def test_a_peer_opening_streams_past_its_rate_is_reported_once_and_never_holds_more_than_its_share() -> None:
    from libp2p import new_host
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.peer.peerinfo import info_from_p2p_addr

    bounds = ConnectionBounds(streams_per_peer=16, stream_opens_per_peer_per_s=1.0)
    flooders: list[str] = []
    told = trio.Event()

    def on_flood(peer: str) -> None:
        flooders.append(peer)
        told.set()

    resources = BoundedResources(bounds, on_flood=on_flood)
    most_held = 0

    async def hold(stream: object) -> None:
        nonlocal most_held
        most_held = max(most_held, resources.report()["held"]["streams"])
        await trio.sleep(30)

    async def flood() -> str:
        loopback = multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")
        node = new_host(key_pair=create_new_key_pair(os.urandom(32)), connection_config=connection_config(bounds),
                        resource_manager=resources)  # fmt: skip
        node.get_network().set_resource_manager(resources, enable_stream_semaphore=False)  # type: ignore[attr-defined]
        node.set_stream_handler("/hold/1", hold)  # type: ignore[arg-type]
        attacker = new_host(key_pair=create_new_key_pair(os.urandom(32)))
        async with node.run(listen_addrs=[loopback]), attacker.run(listen_addrs=[loopback]):
            info = info_from_p2p_addr(multiaddr.Multiaddr(f"{node.get_addrs()[0]}/p2p/{node.get_id()}"))
            await attacker.connect(info)
            muxed: object = attacker.get_network().get_connections(info.peer_id)[0].muxed_conn
            for _ in range(200):  # SYN frames written straight on the wire, as a hostile client would
                await open_raw_stream(muxed, os.urandom(64))
            with trio.fail_after(60):  # a deadline only: it is told within its first 17 + seconds streams
                await told.wait()
            return attacker.get_id().to_base58()

    attacker_id = trio.run(flood)
    assert flooders and set(flooders) == {attacker_id}
    assert resources.report()["held"]["streams"] <= bounds.streams_per_peer
    assert most_held <= bounds.streams_per_peer
