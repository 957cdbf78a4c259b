"""Which addresses a peer may make this node dial (issue 48): none on a network this node is not on.

A peer exchange's answer, an identify or a hole punch names addresses this node then dials from its
own machine. A stranger naming ``192.168.1.1:22`` or ``127.0.0.1:8080`` turned the node into a port
scanner of its own LAN and host, and the peer store kept those addresses for the next start. An
address learnt from another node is dialled only when it is public, or when this node is itself on
that network: a private or link-local address inside one of its own interface networks, loopback
only when the node itself listens on loopback (nodes on one machine, as the tests run them).
Multicast, unspecified and names (``/dns4/…``, which may resolve anywhere; our nodes never tell
them) are never dialled.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import psutil  # type: ignore[import-untyped]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class LocalNetworks:
    """The networks this node is on: its interfaces' (address, netmask) and whether it listens on loopback."""

    networks: tuple[IPNetwork, ...]
    loopback: bool

    @classmethod
    def of(cls, interfaces: Iterable[tuple[str, str]], listen: Iterable[str]) -> LocalNetworks:
        """From this machine's interfaces (``interface_networks()``) and the node's listen addresses."""
        networks = []
        for address, netmask in interfaces:
            try:
                networks.append(ipaddress.ip_network(f"{address.split('%')[0]}/{_prefix(netmask)}", strict=False))
            except ValueError:  # an interface without a usable netmask: not a network we can name
                continue
        on_loopback = any(ip is not None and ip.is_loopback for ip in map(host_ip, listen))
        return cls(tuple(networks), on_loopback)


def _prefix(netmask: str) -> int:
    """A netmask's prefix length (psutil gives an IPv6 one as ``ffff:ffff:ffff:ffff::``, which
    ``ip_network`` does not read)."""
    return bin(int(ipaddress.ip_address(netmask))).count("1")


def interface_networks() -> list[tuple[str, str]]:
    """This machine's IPv4 and IPv6 (address, netmask) pairs."""
    found = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6) and entry.netmask:
                found.append((entry.address, entry.netmask))
    return found


def host_ip(addr: str) -> IPAddress | None:
    """The IP address a multiaddr (``/ip4/…/tcp/…``) dials; None for a name or anything unparsable."""
    parts = addr.split("/")
    if len(parts) < 3 or parts[1] not in ("ip4", "ip6"):
        return None
    try:
        ip = ipaddress.ip_address(parts[2].split("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # ::ffff:127.0.0.1 is loopback too
    return ip


def may_dial(addr: str, local: LocalNetworks) -> bool:
    """Whether an address another node told of may be dialled by this one."""
    ip = host_ip(addr)
    if ip is None or ip.is_multicast or ip.is_unspecified:
        return False
    if ip.is_loopback:
        return local.loopback
    if ip.is_private or ip.is_link_local:
        return any(ip in network for network in local.networks)
    return True


def dialable_from(addrs: Sequence[str], local: LocalNetworks) -> tuple[str, ...]:
    """``addrs`` without those this node may not dial (``may_dial``), in order."""
    return tuple(a for a in addrs if may_dial(a, local))
