"""What a host tells its peers it listens on (identify, and from it peer exchange and DCUtR).

py-libp2p advertises its transport listen addresses as they are. An edge listens on 0.0.0.0 (every
interface), so it told every peer "dial me at 0.0.0.0", and a peer that did reached itself: in the
NAT test each hole punch dialled its own listener beside the real address, a failed handshake
logged as an error each time. An unspecified address stands for each of the machine's interfaces,
as go-libp2p expands it; loopback only where nothing else is up (a peer elsewhere cannot use it).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence

import multiaddr
import psutil  # type: ignore[import-untyped]

#: Interface addresses advertised per family: a host with many (container bridges, VPNs) would
#: otherwise send them all in every identify.
MAX_PER_FAMILY = 8

Interfaces = Callable[[], Sequence[str]]


def interface_addresses() -> list[str]:
    """This machine's IPv4 and IPv6 addresses (link-local IPv6 left out: not dialable without a zone)."""
    found: list[str] = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                address = entry.address.split("%")[0]
                if not ipaddress.ip_address(address).is_link_local:
                    found.append(address)
    return found


def advertised(candidates: Sequence[multiaddr.Multiaddr], interfaces: Interfaces = interface_addresses
               ) -> list[multiaddr.Multiaddr]:  # fmt: skip
    """``candidates`` (listen addresses, then observed ones) with each unspecified address replaced by
    the interface addresses of its family, in order and without repeats."""
    out: list[multiaddr.Multiaddr] = []
    seen: set[str] = set()
    expanded: dict[int, list[str]] | None = None
    for candidate in candidates:
        text = str(candidate)
        family = _unspecified_family(text)
        if family is None:
            replacements = [text]
        else:
            expanded = expanded if expanded is not None else _by_family(interfaces())
            prefix = "/ip4/0.0.0.0" if family == 4 else "/ip6/::"
            replacements = [f"/ip{family}/{ip}{text[len(prefix) :]}" for ip in expanded[family]]
        for replacement in replacements:
            if replacement not in seen:
                seen.add(replacement)
                out.append(multiaddr.Multiaddr(replacement))
    return out


def _unspecified_family(text: str) -> int | None:
    if text == "/ip4/0.0.0.0" or text.startswith("/ip4/0.0.0.0/"):
        return 4
    if text == "/ip6/::" or text.startswith("/ip6/::/"):
        return 6
    return None


def _by_family(addresses: Sequence[str]) -> dict[int, list[str]]:
    """Per family: the routable addresses first, loopback only when there is nothing else."""
    result: dict[int, list[str]] = {}
    ips = [ipaddress.ip_address(a) for a in addresses]
    for family in (4, 6):
        mine = [ip for ip in ips if ip.version == family]
        outward = [str(ip) for ip in mine if not ip.is_loopback]
        result[family] = (outward or [str(ip) for ip in mine if ip.is_loopback])[:MAX_PER_FAMILY]
    return result
