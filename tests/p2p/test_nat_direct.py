"""Direct connections after a hole punch (issue 51), behind real NATs: Linux network namespaces, each
edge on its own LAN behind a router namespace (``tests/netns.py``), a relay on the public side.
Each node is a real ``P2PHost`` in a process of its own (``tests/nat_peer.py``); the two edges know
only the relay, reserve a slot on it, and one reaches the other through it.

The routers, as the kernel runs them (their connection tracking is read in each test):
- ``home``: iptables MASQUERADE, and what arrives from outside unasked is dropped (conntrack state
  NEW or INVALID on the WAN side). The kernel keeps a connection's source port where it is free,
  so one socket leaves from one public port whatever it dials: the mapping is endpoint-independent
  in effect (``src=192.168.1.2 sport=4001`` to any destination has reply ``dport=4001``). Filtering
  depends on address and port (a port-restricted cone): only replies to what went out come in. A
  TCP simultaneous open passes such a NAT, because each end's own SYN makes the entry that the
  other end's SYN then matches as its reply.
- ``symmetric``: MASQUERADE ``--random-fully``: every connection gets a random public port (the
  relay connection from port 38964 left as 33683, the punch from 4001 as 38742, in one run), so
  the port an end predicts for the other's listening socket is not the one it leaves from, and its
  SYN matches no entry at the far NAT: endpoint-dependent mapping.
- ``moved``: SNAT of the listening port 4001 to 14001 for every destination (endpoint-independent,
  the port not kept). The punch does not land: py-libp2p 0.8.1 tells, in its CONNECT, the public IP a
  peer observed with its own listening port (a prediction that holds only where the port is kept),
  and every connection a peer observes leaves from another port, so nothing tells it 14001.

Measured (this machine, 2 cores): behind two home routers, the connection was direct 0.37 to
1.17 s after the first request through the relay, 10 of 10 runs; a punch from behind a symmetric
NAT took 21 s (three rounds) to fail, three per pair in five minutes, and the connection stayed
relayed.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.nat_peer import NatPeer
from tests.netns import MOVED_PORT, PUBLIC_IP, NatLab, conntrack, nat_lab, unavailable

# Namespaces, three processes, and punches that take 21 s to fail: the waits bound a hang, not a speed.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EDGE = {"listen": ["/ip4/0.0.0.0/tcp/4001"]}  # each edge listens on 4001 on its own LAN
CLEAN_LOG = ("Traceback", "failed to upgrade security", "Cannot assign requested address")


@contextlib.contextmanager
def relay_and_edges(kinds: tuple[str, ...]) -> Iterator[tuple[list[NatPeer], list[str], NatLab, dict[str, str]]]:
    """A relay on the public side and an edge behind a router of each of ``kinds``, every edge holding
    a slot on the relay: (edges, their peer ids, the lab, and after the block, each process's log)."""
    if reason := unavailable():
        pytest.skip(reason)
    logs: dict[str, str] = {}
    with nat_lab(kinds) as lab:
        peers: list[NatPeer] = []
        try:
            relay = NatPeer(NatLab.inside(lab.public), {"listen": [f"/ip4/{PUBLIC_IP}/tcp/4001"],
                            "relay_service": True, "reachability": "public"}, "relay")  # fmt: skip
            peers.append(relay)
            me = relay.ask(op="id")
            bootstrap = [f"{me['addrs'][0]}"]
            edges = []
            for i, namespace in enumerate(lab.edges):
                edges.append(NatPeer(NatLab.inside(namespace), {**EDGE, "bootstrap": bootstrap}, f"edge{i}-{kinds[i]}"))
                peers.append(edges[-1])
            ids = [edge.ask(op="id")["peer_id"] for edge in edges]
            for edge in edges:
                slot = wait_for(lambda: edge.ask(op="traversal")["reserved_on"], 60, f"{edge.name}'s relay slot")  # noqa: B023
                assert slot == [me["peer_id"]]
            yield edges, ids, lab, logs
        finally:
            for peer in peers:
                logs[peer.name] = peer.stop()


def wait_for(check: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def relayed(asker: NatPeer, peer: str) -> bool | None:
    """Whether every connection of ``asker`` to ``peer`` goes through a relay (None: not connected)."""
    row = {p["peer_id"]: p for p in asker.ask(op="peers")}.get(peer)
    return None if row is None else bool(row["relayed"])


def punches(edge: NatPeer) -> tuple[int, int, int]:
    """The hole punches ``edge`` took part in: (tried, landed, failed)."""
    nat = edge.ask(op="traversal")
    return nat["hole_punches_tried"], nat["hole_punches_landed"], nat["hole_punches_failed"]


def came_over(asker: NatPeer, peer: str) -> list[str]:
    """The connection ``asker``'s request to ``peer`` came over, as ``peer`` saw it."""
    return list(asker.ask(op="ask", peer=peer)["came_over"])


def through_relay(addrs: list[str]) -> bool:
    return bool(addrs) and all("/p2p-circuit" in a for a in addrs)


def assert_clean(logs: dict[str, str]) -> None:
    for name, log in logs.items():
        for words in CLEAN_LOG:
            assert words not in log, f"{name} logged {words!r}:\n{log[-3000:]}"


def test_behind_endpoint_independent_nats_the_punch_lands_and_requests_go_direct() -> None:
    with relay_and_edges(("home", "home")) as (edges, ids, lab, logs):
        a, b = edges
        started = time.monotonic()
        assert through_relay(came_over(a, ids[1]))  # b cannot be dialled: the request goes through the relay
        wait_for(lambda: relayed(a, ids[1]) is False, 30, "a direct connection from a to b")
        print(f"direct {time.monotonic() - started:.2f} s after the first request through the relay")
        # each end came from its router's public address and its own listening port: the port kept
        assert came_over(a, ids[1]) == ["/ip4/100.64.1.2/tcp/4001"]
        assert came_over(b, ids[0]) == ["/ip4/100.64.2.2/tcp/4001"]
        assert relayed(b, ids[0]) is False
        # one punch, which b opened (the relayed connection came in to b) and a answered, each end's over
        wait_for(lambda: all(punches(e)[1] for e in edges), 30, "each end's punch to end")
        assert [punches(e) for e in edges] == [(1, 1, 0), (1, 1, 0)]  # (tried, landed, failed)
        kept = [line for line in conntrack(lab.routers[0]) if "src=192.168.1.2 dst=100.64.2.2" in line]
        assert kept and all(re.search(r"sport=4001 dport=4001 .*sport=4001 dport=4001", line) for line in kept), kept
    assert_clean(logs)


def test_behind_a_symmetric_nat_the_punch_fails_once_in_the_log_and_the_connection_stays_relayed() -> None:
    with relay_and_edges(("home", "symmetric")) as (edges, ids, lab, logs):
        a, b = edges  # a behind a home router, b behind the symmetric NAT
        assert through_relay(came_over(a, ids[1]))
        # b, whose relayed connection came in, opens; a answers; both dial, and nothing gets through
        for edge in edges:
            wait_for(lambda: punches(edge)[2] >= 2, 120, f"two punches of {edge.name} to fail")  # noqa: B023
        assert relayed(a, ids[1]) is True and relayed(b, ids[0]) is True
        assert through_relay(came_over(a, ids[1])) and through_relay(came_over(b, ids[0]))  # and it still works
        assert all(punches(edge)[1] == 0 for edge in edges)
        # the symmetric NAT gave b's punch from port 4001 another public port
        moved = [line for line in conntrack(lab.routers[1]) if "src=192.168.2.2 dst=100.64.1.2 sport=4001" in line]
        assert moved and not any(re.search(r"src=100.64.1.2 dst=100.64.2.2 sport=4001 dport=4001 ", m) for m in moved)
    assert_clean(logs)
    for edge in edges:
        log = logs[edge.name]
        assert len(re.findall(r"INFO p2p.punch p2p.punch_failed", log)) == 1, log[-3000:]  # two failed, one said
        assert not re.search(r"WARNING libp2p.relay.circuit_v2.dcutr Failed to establish", log)


@pytest.mark.xfail(
    strict=True,
    reason="py-libp2p 0.8.1 predicts the public port to be the listening port "
    "(4001); a NAT that gives it another (14001) for every destination is never told it",
)
def test_behind_nats_that_move_the_listening_port_the_punch_lands() -> None:
    with relay_and_edges(("moved", "moved")) as (edges, ids, lab, logs):
        a, b = edges
        assert through_relay(came_over(a, ids[1]))
        wait_for(lambda: punches(b)[1] or punches(b)[2], 60, "b's first punch to end")
        moved = [line for line in conntrack(lab.routers[1]) if "src=192.168.2.2 dst=100.64.1.2 sport=4001" in line]
        assert moved and all(f"dport={MOVED_PORT}" in line.split("src=100.64.1.2")[-1] for line in moved), moved
        assert relayed(a, ids[1]) is False, "the punch did not land: the connection is still relayed"
    assert_clean(logs)


def test_asked_to_punch_at_once_only_the_end_the_relayed_connection_came_in_to_opens() -> None:
    """Both ends opening at once made each dial one four-tuple twice, in two noise roles: the second
    dial failed to bind (EADDRNOTAVAIL), and 2 of 6 such punches never landed before ``opens_punch``.
    Without it this test fails: each end took part in two punches."""
    with relay_and_edges(("home", "home")) as (edges, ids, _lab, logs):
        a, b = edges
        assert through_relay(came_over(a, ids[1]))  # a dialled b through the relay: it came in to b
        answers: dict[str, Any] = {}
        both = [threading.Thread(target=lambda e=e, p=p: answers.__setitem__(e.name, e.ask(op="punch", peer=p)))
                for e, p in ((a, ids[1]), (b, ids[0]))]  # fmt: skip
        for thread in both:
            thread.start()
        for thread in both:
            thread.join()
        # b's answer is its punch's, or False where the library's own loop (within 2 s of the relayed
        # connection) opened b's punch first: CI at 56 was that slow. a's: declined, or direct by then.
        wait_for(lambda: relayed(a, ids[1]) is False and relayed(b, ids[0]) is False, 30, "a direct connection")
        wait_for(lambda: all(punches(e)[1] for e in edges), 30, "each end's punch to end")
        assert [punches(e) for e in edges] == [(1, 1, 0), (1, 1, 0)], answers  # b opening, a answering, once each
    assert_clean(logs)
    assert "Opening DCUtR stream" not in logs[a.name]
    assert logs[b.name].count("Opening DCUtR stream") == 1
