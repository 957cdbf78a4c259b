"""Real NATs for tests (issue 31): Linux network namespaces joined by veth pairs.

One namespace is the public internet with a public host in it (100.64.1.1: carrier space, which a
node dials as public; a private range there would be a network the edges are not on, whose addresses
they refuse from strangers). Each edge sits on its own LAN (192.168.<i>.2) behind a router namespace
that masquerades (iptables) onto the public side (100.64.<i>.2): an edge can dial the public host,
but nothing outside its LAN can dial the edge.
Every namespace has its own loopback, so a daemon's local API in one is unseen from the others.

Two kinds of router, as found on home and carrier networks:
- ``home``: an outgoing connection keeps its source port where it can (Linux masquerade), and an
  unsolicited packet from outside is dropped without an answer, as most home routers do. Two edges
  behind such NATs can punch through to each other.
- ``symmetric``: each outgoing connection gets a random port (masquerade ``--random-fully``), so the
  port a peer saw on one connection is not the one the next leaves from: no punch gets through.
- ``moved``: a home router that gives the edge's listening port 4001 one other public port,
  ``MOVED_PORT``, for every destination (SNAT to a fixed port; masquerade for the rest): endpoint-
  independent, as many routers and carrier NATs are that do not keep ports.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

PUBLIC_IP = "100.64.1.1"


@dataclass
class NatLab:
    public: str
    edges: list[str] = field(default_factory=list)
    routers: list[str] = field(default_factory=list)

    @staticmethod
    def inside(namespace: str) -> list[str]:
        """The command prefix that runs a program in ``namespace``."""
        return ["ip", "netns", "exec", namespace]

    def namespaces(self) -> list[str]:
        return [self.public, *self.routers, *self.edges]


def unavailable() -> str | None:
    """Why real NATs cannot be built here, or None when they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed (Debian: iproute2, iptables)"
    probe = f"bbprobe{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"network namespaces cannot be made here: {made.stderr.strip()}"
    try:
        nat = _run(probe, "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", "lo", "-j", "MASQUERADE", check=False)
        if nat.returncode != 0:
            return f"this kernel has no NAT for iptables: {nat.stderr.strip()}"
        for rule in (["-t", "nat", "-A", "POSTROUTING", "-o", "lo", "-j", "MASQUERADE", "--random-fully"],
                     ["-A", "INPUT", "-i", "lo", "-m", "conntrack", "--ctstate", "NEW", "-j", "DROP"]):  # fmt: skip
            made_rule = _run(probe, "iptables", *rule, check=False)
            if made_rule.returncode != 0:
                return f"this iptables cannot build the test's routers ({' '.join(rule)}): {made_rule.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


NAT_KINDS = ("home", "symmetric", "moved")
#: The public port a ``moved`` router gives the edge's port 4001, whatever it dials.
MOVED_PORT = 14001


@contextlib.contextmanager
def nat_lab(kinds: Sequence[str] = ("home", "home")) -> Iterator[NatLab]:
    """A public namespace and an edge per item of ``kinds``, each behind its own router of that
    kind; every process left in them is killed and the namespaces deleted at the end."""
    assert set(kinds) <= set(NAT_KINDS), kinds
    tag = uuid.uuid4().hex[:5]
    lab = NatLab(public=f"bbpub{tag}")
    try:
        _namespace(lab.public)
        _sysctl(lab.public, "net.ipv4.ip_forward=1")
        for i, kind in enumerate(kinds, start=1):
            router, edge = f"bbnat{i}{tag}", f"bbedge{i}{tag}"
            lab.routers.append(router)
            lab.edges.append(edge)
            _namespace(router)
            _namespace(edge)
            _link(lab.public, f"p{i}{tag}", f"100.64.{i}.1/24", router, f"w{i}{tag}", f"100.64.{i}.2/24")
            _link(router, f"l{i}{tag}", f"192.168.{i}.1/24", edge, f"e{i}{tag}", f"192.168.{i}.2/24")
            _sysctl(router, "net.ipv4.ip_forward=1")
            _run(router, "ip", "route", "add", "default", "via", f"100.64.{i}.1")
            wan = f"w{i}{tag}"
            ports = ["--random-fully"] if kind == "symmetric" else []
            if kind == "moved":  # the listening port leaves as another, the same for every destination
                _run(router, "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", wan, "-p", "tcp", "--sport", "4001",
                     "-j", "SNAT", "--to-source", f"100.64.{i}.2:{MOVED_PORT}")  # fmt: skip
            _run(router, "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", wan, "-j", "MASQUERADE", *ports)
            for chain in ("INPUT", "FORWARD"):  # unsolicited from outside: dropped, no reset sent back
                _run(router, "iptables", "-A", chain, "-i", wan, "-m", "conntrack", "--ctstate", "NEW,INVALID",
                     "-j", "DROP")  # fmt: skip
            _run(edge, "ip", "route", "add", "default", "via", f"192.168.{i}.1")
        yield lab
    finally:
        for namespace in lab.namespaces():
            pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


def conntrack(namespace: str) -> list[str]:
    """The connections a router's NAT tracks now, one line each as the kernel lists them (original
    direction, then the reply's, where ``dport`` of the reply is the public port the NAT gave)."""
    return _run(namespace, "cat", "/proc/net/nf_conntrack").stdout.splitlines()


def _namespace(name: str) -> None:
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    _run(name, "ip", "link", "set", "lo", "up")


def _link(left: str, left_if: str, left_ip: str, right: str, right_if: str, right_ip: str) -> None:
    subprocess.run(["ip", "link", "add", left_if, "type", "veth", "peer", "name", right_if], check=True)
    for namespace, interface, address in ((left, left_if, left_ip), (right, right_if, right_ip)):
        subprocess.run(["ip", "link", "set", interface, "netns", namespace], check=True)
        _run(namespace, "ip", "addr", "add", address, "dev", interface)
        _run(namespace, "ip", "link", "set", interface, "up")


def _sysctl(namespace: str, setting: str) -> None:
    _run(namespace, "sysctl", "-qw", setting)


def _run(namespace: str, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*NatLab.inside(namespace), *command], check=check, capture_output=True, text=True)
