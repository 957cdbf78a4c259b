"""One reading of listening addresses and busy ports, for `run` and `doctor` (they disagreed on
IPv6 and DNS multiaddrs)."""

from __future__ import annotations

import socket

import pytest

from node.errors import UsageError
from node.runtime.ports import TcpEndpoint, busy_reason, dial_target, refuse_busy_listen, tcp_endpoint


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("/ip4/127.0.0.1/tcp/4001", TcpEndpoint("127.0.0.1", 4001, socket.AF_INET)),
        ("/ip6/::1/tcp/4001", TcpEndpoint("::1", 4001, socket.AF_INET6)),
        ("/ip4/0.0.0.0/tcp/0", TcpEndpoint("0.0.0.0", 0, socket.AF_INET)),
        ("/dns4/node.example/tcp/4001/p2p/12D3KooW", TcpEndpoint("0.0.0.0", 4001, socket.AF_INET)),
        ("/dns6/node.example/tcp/4001", TcpEndpoint("::", 4001, socket.AF_INET6)),
        ("/ip4/127.0.0.1/udp/4001/quic", None),
        ("/ip4/127.0.0.1/tcp/port", None),
        ("not a multiaddr", None),
    ],
)
def test_tcp_endpoints_are_read_from_multiaddrs(address: str, expected: TcpEndpoint | None) -> None:
    assert tcp_endpoint(address) == expected


def test_the_api_host_picks_its_family() -> None:
    assert TcpEndpoint.of_host("::1", 7420).family == socket.AF_INET6
    assert TcpEndpoint.of_host("127.0.0.1", 7420).family == socket.AF_INET


def test_a_listening_port_is_busy_and_a_closed_one_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert busy_reason(TcpEndpoint("127.0.0.1", port, socket.AF_INET)) is not None
    assert busy_reason(TcpEndpoint("127.0.0.1", port, socket.AF_INET)) is None
    assert busy_reason(TcpEndpoint("127.0.0.1", 0, socket.AF_INET)) is None


def test_a_dial_target_keeps_a_dns_name() -> None:
    assert dial_target("/dns4/node.example/tcp/4001/p2p/12D3KooW") == ("node.example", 4001)
    assert dial_target("/ip6/::1/tcp/4001") == ("::1", 4001)
    assert dial_target("/ip4/127.0.0.1/udp/4001") is None


def test_run_refuses_a_busy_listen_port_and_names_it() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} is in use"):
            refuse_busy_listen([f"/ip4/127.0.0.1/tcp/{port}"])
    refuse_busy_listen([f"/ip4/127.0.0.1/tcp/{port}", "/ip4/127.0.0.1/tcp/0", "/ip4/127.0.0.1/udp/1/quic"])
