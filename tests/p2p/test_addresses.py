"""What a host tells its peers it listens on (p2p.network.addresses): an unspecified listen address
is told as the machine's interface addresses, never as 0.0.0.0, which a peer would dial as itself."""

from __future__ import annotations

from multiaddr import Multiaddr

from p2p.network.addresses import MAX_PER_FAMILY, advertised, interface_addresses


def told(candidates: list[str], interfaces: list[str]) -> list[str]:
    return [str(a) for a in advertised([Multiaddr(c) for c in candidates], lambda: interfaces)]


def test_an_unspecified_address_is_each_outward_interface_of_its_family() -> None:
    interfaces = ["127.0.0.1", "::1", "192.168.1.2", "10.8.0.5", "fd00::2"]
    assert told(["/ip4/0.0.0.0/tcp/4001"], interfaces) == ["/ip4/192.168.1.2/tcp/4001", "/ip4/10.8.0.5/tcp/4001"]
    assert told(["/ip6/::/tcp/4001"], interfaces) == ["/ip6/fd00::2/tcp/4001"]


def test_loopback_only_where_nothing_else_is_up() -> None:
    assert told(["/ip4/0.0.0.0/tcp/4001"], ["127.0.0.1", "::1"]) == ["/ip4/127.0.0.1/tcp/4001"]
    assert told(["/ip6/::/tcp/9"], ["127.0.0.1"]) == []  # no IPv6 at all: nothing to tell


def test_other_addresses_pass_as_they_are_in_order_without_repeats() -> None:
    candidates = ["/ip4/127.0.0.1/tcp/5", "/ip4/0.0.0.0/tcp/4001", "/ip4/192.168.1.2/tcp/4001",
                  "/ip4/203.0.113.9/tcp/4001"]  # fmt: skip
    assert told(candidates, ["192.168.1.2"]) == [
        "/ip4/127.0.0.1/tcp/5",
        "/ip4/192.168.1.2/tcp/4001",
        "/ip4/203.0.113.9/tcp/4001",  # an observed address, after the listen ones
    ]


def test_a_machine_with_many_interfaces_tells_a_bounded_number() -> None:
    interfaces = [f"172.17.{i}.1" for i in range(40)]
    assert len(told(["/ip4/0.0.0.0/tcp/4001"], interfaces)) == MAX_PER_FAMILY


def test_this_machines_interfaces_are_read_and_never_unspecified_or_link_local() -> None:
    found = interface_addresses()
    assert "127.0.0.1" in found
    assert not [a for a in found if a in ("0.0.0.0", "::") or a.lower().startswith("fe80")]
