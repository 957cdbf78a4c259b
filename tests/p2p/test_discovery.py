"""Finding the network from one address (issue 31): a node that knows one bootstrap peer learns the
others from it and dials them up to its target, keeps them in its peer store, and at the next start
reconnects from the store with no bootstrap peer at all. What a peer sends in an exchange is bounded
and checked whole; answers to one asker are rate-limited; the store is bounded and survives a
damaged file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from p2p.errors import InvalidValue
from p2p.network.discovery import (
    ASK_INTERVAL_MS,
    MAX_ANSWER_BYTES,
    MAX_SAMPLE,
    AskLimiter,
    KnownPeer,
    PeerStore,
    decode,
    encode,
)
from tests.conftest import clean_env
from tests.daemons import Node, running_details, wait_for

PEER = "12D3KooWKzbhmsoWUbZ3isFyxNJnvE8n2xRHYKY4yAXsRnUtLARL"


def test_a_sample_round_trips_without_undialable_addresses_or_peer_id_suffixes() -> None:
    peers = [KnownPeer(PEER, ("/ip4/0.0.0.0/tcp/4001", f"/ip4/10.0.0.5/tcp/4001/p2p/{PEER}", "/ip4/1.2.3.4/tcp/9"), 1)]
    (back,) = decode(encode(peers), 7)
    assert back == KnownPeer(PEER, ("/ip4/10.0.0.5/tcp/4001", "/ip4/1.2.3.4/tcp/9"), 7)
    # nothing dialable (behind a NAT): named without addresses, so the asker learns who is connected
    # to it (a relay to it), and the store does not keep it
    assert decode(encode([KnownPeer(PEER, ("/ip4/0.0.0.0/tcp/1",), 1)]), 7) == [KnownPeer(PEER, (), 7)]
    store = PeerStore(None, 10)
    store.learn([KnownPeer(PEER, (), 7)])
    assert len(store) == 0
    assert (
        len(decode(encode([KnownPeer(f"{PEER}{i}", ("/ip4/1.2.3.4/tcp/9",), 1) for i in range(99)]), 1)) == MAX_SAMPLE
    )


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"[]",
        json.dumps({"peers": [{"peer_id": PEER, "addrs": ["/ip4/1.2.3.4/tcp/9"]}] * (MAX_SAMPLE + 1)}).encode(),
        json.dumps({"peers": [{"peer_id": PEER, "addrs": ["/ip4/1.2.3.4/tcp/9"] * 9}]}).encode(),
        json.dumps({"peers": [{"peer_id": PEER, "addrs": ["1.2.3.4:9"]}]}).encode(),
        json.dumps({"peers": [{"peer_id": "x", "addrs": []}]}).encode(),
        json.dumps({"peers": [{"peer_id": PEER, "addrs": ["/" + "a" * 300]}]}).encode(),
        b" " * (MAX_ANSWER_BYTES + 1),
    ],
)
def test_a_malformed_or_oversized_sample_is_refused_whole(raw: bytes) -> None:
    with pytest.raises(InvalidValue):
        decode(raw, 1)


def test_one_asker_is_answered_once_per_interval_and_many_askers_cost_bounded_memory() -> None:
    limiter = AskLimiter(size=100)
    assert limiter.allow("a", 0) and not limiter.allow("a", ASK_INTERVAL_MS - 1) and limiter.allow("a", ASK_INTERVAL_MS)
    for i in range(10_000):
        assert limiter.allow(f"fresh-{i}", 2 * ASK_INTERVAL_MS + i)
    assert len(limiter._last) <= 100


def test_the_store_keeps_the_most_recently_seen_and_survives_a_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "p2p" / "peers.json"
    store = PeerStore(path, size=10)
    store.learn(KnownPeer(f"peer-{i:04d}-xxxxxxxx", ("/ip4/1.2.3.4/tcp/9",), i) for i in range(25))
    store.learn([KnownPeer("peer-0024-xxxxxxxx", ("/ip4/5.6.7.8/tcp/9",), 3)])  # older news does not win
    store.save()
    again = PeerStore(path, size=10)
    again.load()
    kept = again.candidates(set(), 100)
    assert [p.peer_id for p in kept] == [f"peer-{i:04d}-xxxxxxxx" for i in range(24, 14, -1)]
    assert kept[0].addrs == ("/ip4/1.2.3.4/tcp/9",)
    path.write_text("{ damaged")
    damaged = PeerStore(path, size=10)
    damaged.load()  # an empty store, logged; the node goes on
    assert len(damaged) == 0


def _discovery(node: Node) -> dict[str, Any]:
    return dict(((running_details(node) or {}).get("p2p") or {}).get("discovery") or {})


def _exchanged(*nodes: Node) -> dict[str, int] | None:
    learned = sum(int(_discovery(n).get("learned") or 0) for n in nodes)
    dialled = sum(int(_discovery(n).get("dialled") or 0) for n in nodes)
    return {"learned": learned, "dialled": dialled} if learned and dialled else None


def _connected(node: Node) -> int:
    return int(((running_details(node) or {}).get("p2p") or {}).get("peers", {}).get("connected") or 0)


@pytest.mark.slow  # three real daemons
def test_a_node_finds_the_rest_from_one_address_and_comes_back_without_it(tmp_path: Path) -> None:
    base = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__TARGET_PEERS="2",
                     BITTERBOT_P2P__DISCOVER_S="1")  # fmt: skip
    hub = Node(tmp_path, "hub", dict(base))
    nodes = [hub]
    hub.start()
    try:
        known = dict(base, BITTERBOT_P2P__BOOTSTRAP=json.dumps([hub.address()]))
        first, second = Node(tmp_path, "first", dict(known)), Node(tmp_path, "second", dict(known))
        for node in (first, second):
            node.start()
            nodes.append(node)
            node.address()
        second_id = second.json("status")["identity"]["peer_id"]
        wait_for(lambda: _connected(first) >= 2, 60, "the first node to find the second through the hub", nodes)
        assert second_id in {r["peer_id"] for r in first.json("peers") if r["connected"]}
        # one of the two learned of the other from the hub and dialled it (whichever asked first); the
        # status files that say so are rewritten every few seconds
        counted = wait_for(lambda: _exchanged(first, second), 60, "the exchange in status", nodes)
        assert counted["learned"] >= 1 and counted["dialled"] >= 1
        first.stop()
        nodes.remove(first)
        kept = json.loads((first.data / "p2p" / "peers.json").read_text())["peers"]
        assert second_id in {p["peer_id"] for p in kept}

        alone = Node(tmp_path, "first", dict(base))  # the same data dir, no bootstrap peer at all
        alone.start()
        nodes.append(alone)
        wait_for(lambda: _connected(alone) >= 2, 60, "the restarted node to reconnect from its store", nodes)
    finally:  # the last started first: one dialling every second must not race the hub's shutdown
        logs = {node.data.name: node.stop() for node in reversed(nodes)}
    for name, log in logs.items():
        assert "Traceback" not in log, f"{name}:\n{log[-3000:]}"
