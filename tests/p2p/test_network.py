"""Four real nodes, each its own `bitterbot-node run` process, on 127.0.0.1.

Topology is a line, so every message crosses relays: manager - edge1 - edge2 - edge3.
A skill shared on edge3 reaches the manager; a weather broadcast by the manager
halts untrusted ingestion on every node and then expires by itself.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import clean_env
from tests.daemons import Node, management_node, wait_for

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)


def _line_of_nodes(tmp_path: Path, edges: int, **settings: str) -> Iterator[list[Node]]:
    """A management node, then ``edges`` edge nodes each bootstrapping from the one before it. They keep
    to that line (no peer exchange: ``target_peers`` 0), so what reaches the far end crossed relays."""
    base = clean_env(
        BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__DEGREE_LOW="1", BITTERBOT_P2P__DEGREE="3",
        BITTERBOT_P2P__TARGET_PEERS="0", **settings,
    )  # fmt: skip
    manager, trust = management_node(tmp_path, base)
    nodes = [manager]
    manager.start()
    try:
        previous = manager.address()
        for i in range(1, edges + 1):
            node = Node(tmp_path, f"edge{i}", {**base, **trust, "BITTERBOT_P2P__BOOTSTRAP": json.dumps([previous])})
            node.start()
            nodes.append(node)
            previous = node.address()
        yield nodes
    finally:
        logs = {node.data.name: node.stop() for node in nodes}
        for name, log in logs.items():
            assert "Traceback" not in log, f"{name}:\n{log}"


@pytest.fixture
def network(tmp_path: Path) -> Iterator[list[Node]]:
    yield from _line_of_nodes(tmp_path, 3)


def _found(node: Node, words: str) -> list[dict[str, Any]]:
    """Peer crystals matching the words, held ones included: these authors are strangers here, so what they
    share waits in quarantine; that it arrived at all is what these tests are about."""
    hits = node.json("memory", "search", words, "--mode", "keyword", "--held")
    return [h for h in hits if h["crystal"]["origin"] == "peer"]


def _own_listings(node: Node) -> list[dict[str, Any]]:
    return [r for r in node.json("skills", "list") if r["mine"]]


def _halting_weather(node: Node) -> dict[str, Any] | None:
    weather = dict(node.json("weather", "show"))
    return weather if weather["halts_untrusted_ingestion"] else None


def _clear_weather(node: Node) -> bool:
    return not node.json("weather", "show")["halts_untrusted_ingestion"]


def test_skills_cross_relays_and_weather_halts_then_expires(network: list[Node]) -> None:
    manager, edge1, edge2, edge3 = network
    skill = edge3.json(
        "memory", "add", "To rotate logs run logrotate with force", "--type", "skill", "--scope", "shared"
    )
    private = edge3.json("memory", "add", "Flush the page cache with sync", "--type", "skill")  # the default scope
    refused = edge3.cli("skills", "share", private["crystal"]["id"])
    assert refused.returncode == 2 and "private" in refused.stderr
    crystal_id = skill["crystal"]["id"]

    # Meshes form within a few heartbeats; share until the farthest node has it.
    def arrived() -> list[dict[str, Any]]:
        shared = edge3.cli("skills", "share", crystal_id)
        assert shared.returncode == 0, shared.stderr
        return _found(manager, "logrotate")

    hits = wait_for(arrived, 90, "the skill to reach the manager", network)
    assert hits[0]["crystal"]["quarantined"], "a stranger's skill must wait in quarantine"
    agents_view = manager.json("memory", "search", "logrotate", "--mode", "keyword")
    assert [h for h in agents_view if h["crystal"]["origin"] == "peer"] == [], "held: not in the agent's view"
    crystal = hits[0]["crystal"]
    assert crystal["semantic_type"] == "skill" and crystal["source"].startswith("peer:")
    for node in (edge1, edge2):
        assert wait_for(functools.partial(_found, node, "logrotate"), 30, f"{node.data.name} to have it")

    broadcast = manager.cli("weather", "broadcast", "--level", "0.9", "--duration", "30s", "--reason", "drill")
    assert broadcast.returncode == 0, broadcast.stderr
    for node in network:
        state = wait_for(functools.partial(_halting_weather, node), 30, "the weather to arrive")
        assert state["level"] == 0.9 and state["reason"] == "drill"
        assert node.json("memory", "hormones")["cortisol"] >= 0.9

    # During the weather a skill from a provisional peer stops at the first hop.
    halted = edge3.json(
        "memory", "add", "To flush DNS run resolvectl flush-caches", "--type", "skill", "--scope", "shared"
    )
    assert edge3.cli("skills", "share", halted["crystal"]["id"]).returncode == 0
    counts = wait_for(  # the topic's counts appear in status at its next refresh after the first message
        lambda: (
            edge2.json("status")["daemon"]["details"]["p2p"]["messages"]
            .get("bitterbot/skills/1", {})
            .get("ingestion_halted")
        ),
        60,
        "edge2 to refuse the skill",
    )
    assert counts >= 1
    time.sleep(1.0)
    assert _found(edge1, "resolvectl") == []

    # It expires by itself; then sharing works again.
    for node in network:
        wait_for(functools.partial(_clear_weather, node), 60, "the weather to expire")
    wait_for(
        lambda: edge3.cli("skills", "share", halted["crystal"]["id"]) and _found(manager, "resolvectl"),
        30,
        "the skill to pass after the weather",
    )
    peers = manager.json("peers")
    assert [p["level"] for p in peers if p["connected"]] == ["provisional"]
    # A proven, shared skill is listed with its price; every node sees the listing and its seller's level.
    proven = edge3.json(
        "memory", "add", "Rebuild the search index with reindex --all", "--type", "skill", "--scope", "shared"
    )
    proven_id = proven["crystal"]["id"]
    early = edge3.cli("skills", "publish", proven_id)
    assert early.returncode == 2 and "needs at least 3 recorded executions" in early.stderr
    for outcome in ("--success", "--success", "--failure"):
        assert edge3.cli("skills", "record", proven_id, outcome).returncode == 0
    published = edge3.json("skills", "publish", proven_id)
    assert published["price_micro_usdc"] > 0 and published["seller_address"].startswith("0x")

    def listed() -> list[dict[str, Any]]:
        return [r for r in manager.json("skills", "list") if r["price_micro_usdc"] == published["price_micro_usdc"]]

    (row,) = wait_for(listed, 30, "the listing to reach the manager", network)
    assert row["seller_level"] == "provisional" and not row["verified"] and row["executions"] == 3
    assert (wait_for(functools.partial(_own_listings, edge3), 10, "edge3's own listing"))[0]["mine"]
    seen_from_edge1 = {p["peer_id"]: p["level"] for p in edge1.json("peers") if p["connected"]}
    manager_id = manager.json("status")["identity"]["peer_id"]
    assert seen_from_edge1[manager_id] == "verified" and len(seen_from_edge1) == 2
    status = edge1.cli("status").stdout
    assert "2 peers (1 provisional, 1 verified)" in status and "weather clear" in status
    assert "listening   /ip4/127.0.0.1/tcp/" in status
    refused = edge1.cli("weather", "broadcast", "--level", "0.5", "--duration", "1m", "--reason", "nope")
    assert refused.returncode == 2 and "only a management node" in refused.stderr
    # The management node endorses the listing: every node marks it verified; an edge cannot endorse.
    listing = f"{row['seller_peer_id']}/{row['stable_skill_id']}"
    not_management = edge1.cli("skills", "endorse", listing)
    assert not_management.returncode == 2 and "not in [trust] management_keys" in not_management.stderr
    assert manager.cli("skills", "endorse", listing).returncode == 0

    def verified_on_edge1() -> list[dict[str, Any]]:
        return [r for r in edge1.json("skills", "list") if r["stable_skill_id"] == row["stable_skill_id"]
                and r["verified"]]  # fmt: skip

    (endorsed,) = wait_for(verified_on_edge1, 30, "the endorsement to reach edge1", network)
    assert endorsed["endorsed_by"] == [manager.json("status")["identity"]["public_key"]]


@pytest.fixture
def line_of_three(tmp_path: Path) -> Iterator[list[Node]]:
    """manager - edge1 - edge2, gossiping trust attestations every 3 s."""
    yield from _line_of_nodes(tmp_path, 2, BITTERBOT_P2P__ATTESTATION_INTERVAL_MIN="0.05")


def _level_of(node: Node, peer_id: str) -> str | None:
    return next((p["level"] for p in node.json("peers") if p["peer_id"] == peer_id), None)


def _ingested_attestations(node: Node) -> int:
    return int(node.json("status")["daemon"]["details"]["p2p"]["ingested"]["attestations"])


def test_a_management_attestation_makes_a_peer_verified_where_it_never_ran_its_skills(
    line_of_three: list[Node],
) -> None:
    """Trust crosses processes: the manager's agent runs edge2's skill and it works; the manager gossips
    its signed attestation; edge1, which never ran anything of edge2's, then sees edge2 as verified."""
    manager, edge1, edge2 = line_of_three
    edge2_id = edge2.json("status")["identity"]["peer_id"]
    skill = edge2.json(
        "memory", "add", "Renew the TLS certificate with certbot renew", "--type", "skill", "--scope", "shared"
    )

    def arrived() -> list[dict[str, Any]]:
        assert edge2.cli("skills", "share", skill["crystal"]["id"]).returncode == 0
        return _found(manager, "certbot")

    received = wait_for(arrived, 90, "the skill to reach the manager", line_of_three)[0]["crystal"]["id"]
    assert wait_for(lambda: _level_of(edge1, edge2_id), 30, "edge1 to know edge2") == "provisional"

    # Runs of a skill still held earn its author nothing (issue 27): the person releases it first.
    agents_view = functools.partial(manager.json, "memory", "search", "certbot", "--mode", "keyword")
    assert agents_view() == []
    approved = manager.cli("memory", "quarantine", "approve", received)
    assert approved.returncode == 0, approved.stderr
    assert agents_view()
    for _ in range(8):  # 8 good runs: 40 points, a local trust of 0.8 or more on the manager
        recorded = manager.cli("skills", "record", received, "--success")
        assert recorded.returncode == 0, recorded.stderr
    wait_for(lambda: _level_of(edge1, edge2_id) == "verified", 60, "edge2 to be verified on edge1", line_of_three)
    # status reports what the daemon wrote at its last status refresh (every few seconds), which
    # `peers`, answered by the daemon at once, can be ahead of
    wait_for(lambda: _ingested_attestations(edge1) >= 1, 30, "the attestation in edge1's status", line_of_three)
