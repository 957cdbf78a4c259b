"""Bounded per connection (issue 31), with real processes: a stranger opens 1,000 TCP connections from
one address, and 10,000 yamux streams under a fresh key on one connection, at a node whose
management node then broadcasts weather.

What the node must show: its descriptors stay within its per-IP bound of where they were (before the
bounds, the 1,000 connections held 250 descriptors, every inbound slot, for 10 s); its memory does not
grow with the streams (before, 10,000 streams of 4 KB grew it by 120 MB); the stream flooder is banned
and disconnected; the weather arrives; and an honest newcomer still connects. How long the weather
takes with and without the flood is measured by `python -m bench connection_flood`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.network.connection_flood import Flood
from bench.network.flooded_node import Usage
from tests.conftest import clean_env
from tests.daemons import Node, management_node, wait_for

# Real processes. The waits below bound a hang, not a speed (the bench measures that: the weather
# takes milliseconds under either flood). Status counts the refusals as of its last snapshot, so
# that count is waited for too. Once in CI the weather never came within 60 s, the flooder not yet
# banned and no gossip judged at all: a lost broadcast, not a slow one. The manager now renews its
# weather every 30 s (`p2p.weather_renew_s`), so a lost one arrives with the next renewal.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

CONNECTIONS, STREAMS = 1_000, 10_000
PER_IP = 8  # the default of [p2p] connections_per_ip
#: Descriptors the node may open beside the flood: its own dials, the newcomer, a CLI call's socket.
FD_MARGIN = 16
RSS_GROWTH_BUDGET_KB = 40 * 1024


def _limits(node: Node) -> dict[str, Any]:
    limits: dict[str, Any] = node.json("status")["daemon"]["details"]["p2p"]["limits"]
    return limits


def _connected(node: Node) -> set[str]:
    return {row["peer_id"] for row in node.json("peers") if row.get("connected")}


def test_a_strangers_connection_and_stream_floods_cost_bounded_descriptors_and_memory_and_weather_passes(
    tmp_path: Path,
) -> None:
    base = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__TARGET_PEERS="0")
    manager, trust = management_node(tmp_path, base)
    manager_id = manager.json("status")["identity"]["peer_id"]
    manager.start()
    target = Node(tmp_path, "target", {**base, **trust, "BITTERBOT_P2P__BOOTSTRAP": json.dumps([manager.address()])})
    newcomer: Node | None = None
    floods: list[Flood] = []
    try:
        target.start()
        target_address = target.address()
        wait_for(lambda: manager_id in _connected(target), 60, "the target to reach its management node", [target])
        assert target.proc is not None
        usage = Usage(target.proc.pid)
        usage.sample()
        fds_before, rss_before_kb = usage.fds, usage.rss_kb

        # From 127.0.0.2: loopback's other address, so that the newcomer below (127.0.0.1) is another IP.
        floods.append(Flood(target_address, "--connections", str(CONNECTIONS), "--source", "127.0.0.2"))
        floods.append(Flood(target_address, "--streams", str(STREAMS), "--write", "4096"))
        usage.sample()
        assert floods[0].opened["opened"] + floods[0].opened["refused"] == CONNECTIONS

        broadcast = manager.cli("weather", "broadcast", "--level", "0.9", "--duration", "10m", "--reason", "drill")
        assert broadcast.returncode == 0, broadcast.stderr

        def weather_arrived() -> bool:
            usage.sample()
            return bool(target.json("weather", "show")["halts_untrusted_ingestion"])

        wait_for(weather_arrived, 150, "the weather to reach the flooded node", [target])

        newcomer = Node(
            tmp_path, "newcomer", {**base, **trust, "BITTERBOT_P2P__BOOTSTRAP": json.dumps([target_address])}
        )
        assert newcomer.cli("init").returncode == 0
        newcomer_id = newcomer.json("status")["identity"]["peer_id"]
        newcomer.start()

        def newcomer_in() -> bool:
            usage.sample()
            return newcomer_id in _connected(target)

        wait_for(newcomer_in, 120, "an honest newcomer to connect during the flood", [target, newcomer])

        def both_floods_refused() -> dict[str, Any] | None:
            # Status reports the bounds' counts as of its last snapshot (every `status_interval_s`).
            limits = _limits(target)
            refused = limits["refused"]
            return limits if "stream_opens_rate" in refused and "connections_per_ip" in refused else None

        limits = wait_for(both_floods_refused, 120, "status to count both floods' refusals", [target])
    finally:
        ends = [flood.end() for flood in floods]
        logs = {node.data.name: node.stop() for node in (manager, target, newcomer) if node is not None}
    for name, log in logs.items():
        assert "Traceback" not in log, f"{name}:\n{log}"

    refused = limits["refused"]
    assert refused.get("connections_per_ip", 0) >= CONNECTIONS - PER_IP - 1  # one is the newcomer's bound's slack
    assert refused.get("stream_opens_rate", 0) >= 1
    assert ends[1]["closed_by_node"] is True  # the stream flooder was banned and its connection closed
    assert usage.fds <= fds_before + PER_IP + FD_MARGIN, (usage.fds, fds_before)
    assert usage.rss_kb - rss_before_kb < RSS_GROWTH_BUDGET_KB, (usage.rss_kb, rss_before_kb)
