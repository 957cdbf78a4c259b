"""Listening addresses as the node reads them (TCP multiaddrs and host:port), and whether a port
is free: one reading for `run` (which refuses a busy port) and `doctor` (which reports it)."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from node.errors import UsageError


@dataclass(frozen=True, slots=True)
class TcpEndpoint:
    host: str  # an address to bind: a DNS name in a multiaddr binds the wildcard of its family
    port: int
    family: socket.AddressFamily

    @classmethod
    def of_host(cls, host: str, port: int) -> TcpEndpoint:
        return cls(host, port, socket.AF_INET6 if ":" in host else socket.AF_INET)


_KINDS = ("ip4", "ip6", "dns", "dns4", "dns6")


def _tcp_parts(multiaddr: str) -> tuple[str, str, int] | None:
    """(kind, host, port) of ``/KIND/HOST/tcp/PORT[/...]``, or None."""
    parts = multiaddr.split("/")
    if len(parts) < 5 or parts[0] != "" or parts[1] not in _KINDS or parts[3] != "tcp" or not parts[4].isdigit():
        return None
    return parts[1], parts[2], int(parts[4])


def dial_target(multiaddr: str) -> tuple[str, int] | None:
    """(host, port) to connect to for a TCP multiaddr (a DNS name as it is), or None."""
    parsed = _tcp_parts(multiaddr)
    return (parsed[1], parsed[2]) if parsed else None


def tcp_endpoint(multiaddr: str) -> TcpEndpoint | None:
    """The TCP endpoint of ``/ip4|ip6|dns|dns4|dns6/HOST/tcp/PORT[/...]``; None for any other address."""
    parsed = _tcp_parts(multiaddr)
    if parsed is None:
        return None
    kind, host, port = parsed
    if kind == "ip4":
        return TcpEndpoint(host, port, socket.AF_INET)
    if kind == "ip6":
        return TcpEndpoint(host, port, socket.AF_INET6)
    if kind in ("dns", "dns4"):
        return TcpEndpoint("0.0.0.0", port, socket.AF_INET)  # noqa: S104 - probing, not serving
    return TcpEndpoint("::", port, socket.AF_INET6)  # dns6


def busy_reason(endpoint: TcpEndpoint) -> str | None:
    """Why ``endpoint`` cannot be bound (the OS's words), or None when it is free. Port 0 is always free.
    SO_REUSEADDR: a previous run's connections lingering in TIME_WAIT do not count; a listener does."""
    if endpoint.port == 0:
        return None
    with socket.socket(endpoint.family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((endpoint.host, endpoint.port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def refuse_busy_listen(listen: list[str]) -> None:
    """py-libp2p binds with SO_REUSEPORT, so a second node on a busy port would start and share
    it silently; refuse instead, naming the port and the fix."""
    for address in listen:
        endpoint = tcp_endpoint(address)
        busy = busy_reason(endpoint) if endpoint is not None else None
        if endpoint is not None and busy is not None:
            raise UsageError(
                f"p2p.listen {address}: port {endpoint.port} is in use ({busy}); "
                "another node on this machine needs its own port (set [p2p] listen)"
            )
