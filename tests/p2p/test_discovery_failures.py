"""Issue 48: a discovery round cut off in the middle (one neighbour's answer in, another still
asking) raises to the daemon's supervisor, which counts it and runs the loop again; nothing of the
failed round is left running, and the next round finds what the failed one did not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from ground import failpoints
from marketplace.gossip.kinds import every_kind
from node.runtime.lifecycle import TaskSupervisor
from p2p.host import P2PHost
from p2p.network.discovery import PROTOCOL, PeerDiscovery, PeerStore
from p2p.network.settings import LOOPBACK, DiscoverySettings, HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator

pytestmark = pytest.mark.slow  # real hosts


def _host(settings: HostSettings | None = None) -> P2PHost:
    return P2PHost(
        Identity.generate(),
        MessageValidator(TrustAnchors(), kinds=every_kind()),
        PenaltyBox(),
        settings or HostSettings(listen=LOOPBACK),
    )


def _sample(peer: P2PHost) -> bytes:
    return json.dumps({"peers": [{"peer_id": peer.peer_id, "addrs": list(peer.listen_addrs)}]}).encode()


def _asking() -> list[asyncio.Task[object]]:
    """The discovery's asks still running in this loop."""
    return [
        t for t in asyncio.all_tasks() if not t.done() and getattr(t.get_coro(), "__qualname__", "").endswith("_ask")
    ]


async def test_a_discovery_round_cut_off_mid_way_is_restarted_counted_and_leaves_nothing_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    far_one, far_two = _host(), _host()
    fast, slow = _host(), _host()
    answer_slowly = asyncio.Event()

    async def tell_far_one(_asker: str, _request: bytes) -> bytes:
        return _sample(far_one)

    async def tell_far_two(_asker: str, _request: bytes) -> bytes:
        await answer_slowly.wait()  # still asking when the other neighbour's answer fails the round
        return _sample(far_two)

    fast.serve(PROTOCOL, tell_far_one)
    slow.serve(PROTOCOL, tell_far_two)
    hosts = [far_one, far_two, fast, slow]
    for host in hosts:
        await host.start()
    node = _host()
    store = PeerStore(tmp_path / "peers.json", size=100)
    discovery = PeerDiscovery(
        node, DiscoverySettings(target_peers=10, discover_s=1), store, me=node.peer_id, dial_timeout_s=10
    )
    left_running: list[int] = []

    async def between_tries(_delay: float) -> None:  # the supervisor's backoff: the failed round is over
        left_running.append(len(_asking()))
        answer_slowly.set()

    supervisor = TaskSupervisor(sleep=between_tries)
    try:
        await node.start()
        for neighbour in (fast, slow):
            await node.connect(f"{neighbour.listen_addrs[0]}/p2p/{neighbour.peer_id}")
        monkeypatch.setenv(failpoints.ENV, "discovery:heard=1")
        monkeypatch.setattr(failpoints, "_hits", {})
        supervisor.spawn("p2p-discovery", discovery.run)
        wanted = {far_one.peer_id, far_two.peer_id}
        async with asyncio.timeout(60):  # a bound on a hung dial, not a time to meet
            while not wanted <= {s.peer_id for s in await node.peers()}:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        health = supervisor.health()["p2p-discovery"]
        assert health.restarts == 1 and "FailpointHit" in str(health.last_error)
        assert left_running == [0]  # the slow neighbour's ask was cancelled with the failed round
        peers = [s.peer_id for s in await node.peers()]
        assert sorted(peers) == sorted({*peers}) and set(peers) == wanted | {fast.peer_id, slow.peer_id}
    finally:
        await supervisor.close(10)
        await node.stop()
        for host in hosts:
            await host.stop()
