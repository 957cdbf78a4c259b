"""Real libp2p hosts on 127.0.0.1, each on its own trio thread: relay, first-hop rejection, bans, shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import os
import threading
from collections.abc import AsyncIterator

import pytest

from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from ground.errors import WiringError
from marketplace.gossip.kinds import every_kind
from p2p.errors import ProtocolRefused, RequestFailed
from p2p.host import P2PHost
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox, PenaltySettings
from p2p.settings import GossipRates
from p2p.topics import SKILLS_TOPIC, WEATHER_TOPIC
from p2p.validation import MessageValidator, Outcome
from p2p.verdicts import POLICY, Reason, Verdict
from tests.p2p.conftest import listing, skill_envelope, wall_ms, weather_envelope

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

SMALL_MESH = HostSettings(listen=LOOPBACK, degree=3, degree_low=2, degree_high=6)


class RogueValidator(MessageValidator):
    """Named fake for an attacker's node: forwards anything, so its junk reaches an honest first hop."""

    def validate(self, topic: str, data: bytes, origin_peer: str, now_ms: int) -> Outcome:
        return Outcome(Verdict.ACCEPT, Reason.ACCEPTED, 0)


async def start_line(*validators: MessageValidator, penalties: PenaltySettings | None = None) -> list[P2PHost]:
    """Hosts connected in a line (0 - 1 - 2 ...), returned once every gossip mesh has formed."""
    return await link_line([P2PHost(Identity.generate(), v, PenaltyBox(penalties), SMALL_MESH) for v in validators])


async def link_line(hosts: list[P2PHost]) -> list[P2PHost]:
    """Start ``hosts``, connect them in a line, and wait until every gossip mesh has formed."""
    for host in hosts:
        await host.start()
    for left, right in itertools.pairwise(hosts):
        await right.connect(left.listen_addrs[0])
    # Every link grafted into the mesh, both ways (an end has one neighbour, the rest two): gossip
    # published earlier may be lost, and a busy machine grafts late. A bound on waiting, not a claim.
    async with asyncio.timeout(60):
        for i, host in enumerate(hosts):
            neighbours = (i > 0) + (i < len(hosts) - 1)
            while await host.mesh_size(SKILLS_TOPIC) < neighbours:  # noqa: ASYNC110 - polling the library's mesh
                await asyncio.sleep(0.1)
    return hosts


@pytest.fixture
async def honest_three() -> AsyncIterator[list[P2PHost]]:
    hosts = await start_line(*(MessageValidator(TrustAnchors(), kinds=every_kind()) for _ in range(3)))
    try:
        yield hosts
    finally:
        for host in hosts:
            await host.stop()


async def test_a_skill_crosses_a_relay(honest_three: list[P2PHost]) -> None:
    a, b, c = honest_three
    author = a._identity
    await a.publish(SKILLS_TOPIC, skill_envelope(author, wall_ms()).encode())
    at_c = await asyncio.wait_for(c.deliveries.get(), 5)
    assert at_c.outcome.reason is Reason.ACCEPTED and at_c.forwarder == b.peer_id
    assert at_c.outcome.envelope is not None and at_c.outcome.envelope.author == author.public_key
    assert b.deliveries.qsize() == 1 and a.deliveries.qsize() == 0  # a publisher does not deliver to itself


async def test_junk_is_rejected_at_the_first_hop_and_never_reaches_the_third_node() -> None:
    manager = Identity.generate()
    rogue_v = RogueValidator(TrustAnchors(), kinds=every_kind())
    rogue, first, third = await start_line(
        rogue_v,
        MessageValidator(TrustAnchors([manager.public_key]), kinds=every_kind()),
        MessageValidator(TrustAnchors([manager.public_key]), kinds=every_kind()),
        penalties=PenaltySettings(penalty_threshold=10_000),  # keep the rogue connected: every message gets judged
    )
    try:
        me, now = rogue._identity, wall_ms()
        stolen = weather_envelope(manager, now).encode()  # a real manager's envelope, published by the rogue
        good = skill_envelope(me, now)
        junk = {
            "malformed": b"\x93not an envelope",
            "oversized": b"\x00" * 70_000,
            "forged": good._replace(sig=bytes(64)).encode(),
            "stale": skill_envelope(me, now - 3_600_000).encode(),
            "wrong_key_weather": weather_envelope(me, now).encode(),
            "not_the_author": stolen,
        }
        for name, data in junk.items():
            topic = WEATHER_TOPIC if "weather" in name or name == "not_the_author" else SKILLS_TOPIC
            await rogue.publish(topic, data)
        replayed = skill_envelope(me, now).encode()
        await rogue.publish(SKILLS_TOPIC, replayed)
        await rogue.publish(SKILLS_TOPIC, replayed)  # same envelope, new gossip message
        async with asyncio.timeout(10):
            while sum(sum(r.values()) for r in first.validator.snapshot_counters().values()) < 8:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        counts = first.validator.snapshot_counters()
        assert counts[SKILLS_TOPIC] == {
            "malformed": 1,
            "too_large": 1,
            "bad_signature": 1,
            "expired": 1,
            "accepted": 1,
            "replayed": 1,
        }
        assert counts[WEATHER_TOPIC] == {"not_management": 1, "author_mismatch": 1}
        await asyncio.sleep(1.0)
        # Only the one honest-looking skill went on; nothing else reached the third node.
        assert third.validator.snapshot_counters() == {SKILLS_TOPIC: {"accepted": 1}}
        expected = sum(POLICY[Reason(r)][2] for t in counts.values() for r in t)  # it published them itself
        peers = {p.peer_id: p for p in await first.peers()}
        assert peers[rogue.peer_id].penalty_points == pytest.approx(expected, rel=0.05)
    finally:
        for host in (rogue, first, third):
            await host.stop()


async def test_a_flooding_peer_is_banned_while_honest_delivery_goes_on() -> None:
    rogue, first, third = await start_line(
        RogueValidator(TrustAnchors(), kinds=every_kind()),
        MessageValidator(TrustAnchors(), kinds=every_kind()),
        MessageValidator(TrustAnchors(), kinds=every_kind()),
    )
    try:
        for _ in range(60):  # far past its rate: 5 points per ignored message, banned at 100
            await rogue.publish(SKILLS_TOPIC, skill_envelope(rogue._identity, wall_ms()).encode())
        async with asyncio.timeout(10):
            while first.counters.bans < 1:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        async with asyncio.timeout(10):
            while rogue.peer_id in {p.peer_id for p in await first.peers() if p.banned_until_ms is None}:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        banned = {p.peer_id: p for p in await first.peers()}[rogue.peer_id]
        assert banned.banned_until_ms is not None
        # The honest line still works (published until it arrives: the mesh may need a heartbeat to
        # repair after the ban on a loaded machine, and late flood messages may still be queued).
        async with asyncio.timeout(20):
            honest = None
            while honest is None:
                await first.publish(SKILLS_TOPIC, skill_envelope(first._identity, wall_ms()).encode())
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1):
                        while honest is None:
                            delivery = await third.deliveries.get()
                            envelope = delivery.outcome.envelope
                            if envelope is not None and envelope.author == first._identity.public_key:
                                honest = delivery
    finally:
        for host in (rogue, first, third):
            await host.stop()


async def test_repeated_start_and_stop_leaks_no_threads_or_fds() -> None:
    async def cycle() -> None:
        a = P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), SMALL_MESH)
        b = P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), SMALL_MESH)
        await a.start()
        await b.start()
        await b.connect(a.listen_addrs[0])
        await b.stop()
        await a.stop()

    def own_threads() -> set[str]:
        # The asyncio default executor grows its pool on demand: its threads are not ours to count.
        return {t.name for t in threading.enumerate() if not t.name.startswith("asyncio_")}

    def open_fds() -> list[str]:
        gc.collect()  # sockets closed but not yet collected are not leaks
        names = []
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(FileNotFoundError):  # the listing's own fd is gone by now
                names.append(os.readlink(f"/proc/self/fd/{fd}"))
        return sorted(names)

    await cycle()  # warm up: executor threads, imports
    threads = own_threads()
    before = open_fds()
    for _ in range(5):
        await cycle()
    await asyncio.sleep(0.5)
    after = open_fds()
    assert own_threads() <= threads
    # Each cycle opens two listeners and a connection (>= 4 sockets): a leak would grow by 20+.
    assert len(after) <= len(before) + 2, sorted(set(after) - set(before))


async def test_direct_requests_get_answers_and_failures_are_clear() -> None:
    server = P2PHost(
        Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), SMALL_MESH
    )
    # Direct streams need no gossip: the client speaks no gossip kind, so it subscribes to nothing.
    client = P2PHost(Identity.generate(), MessageValidator(TrustAnchors()), PenaltyBox(), SMALL_MESH)
    seen: list[str] = []

    async def echo(peer: str, request: bytes) -> bytes:
        seen.append(peer)
        if request == b"slow":
            await asyncio.sleep(5)
        return request[::-1]

    server.serve("/bitterbot/test/1", echo)
    await server.start()
    await client.start()
    try:
        await client.connect(server.listen_addrs[0])
        assert await client.request(server.peer_id, "/bitterbot/test/1", b"hello") == b"olleh"
        big = bytes(range(256)) * 1_000
        assert await client.request(server.peer_id, "/bitterbot/test/1", big) == big[::-1]
        assert seen == [client.peer_id, client.peer_id]  # the requester's authenticated peer id
        with pytest.raises(TimeoutError, match="did not answer"):
            await client.request(server.peer_id, "/bitterbot/test/1", b"slow", timeout_s=0.5)
        with pytest.raises(RequestFailed, match="/bitterbot/unknown/1"):
            await client.request(server.peer_id, "/bitterbot/unknown/1", b"x", timeout_s=5)
        with pytest.raises(WiringError, match="before the host starts"):
            server.serve("/late/1", echo)
        with pytest.raises(WiringError, match="no registered gossip kind travels on"):
            await client.publish(SKILLS_TOPIC, b"x")
    finally:
        await client.stop()
        await server.stop()


async def test_a_peer_that_does_not_speak_a_protocol_keeps_its_connection() -> None:
    # A peer of another kind (a js-libp2p node without our protocols) answers "na" to them. Before,
    # the node took any failed stream for a connection left from before a restart: it dropped the
    # connection, gossip mesh and all, and dialled again, each time it asked (every discovery round).
    from libp2p.peer.id import ID

    other, node = (
        P2PHost(Identity.generate(), MessageValidator(TrustAnchors()), PenaltyBox(), SMALL_MESH) for _ in "ab"
    )
    await other.start()
    await node.start()

    async def connections() -> list[int]:
        return [id(c) for c in node._host.get_network().get_connections(ID.from_base58(other.peer_id))]

    try:
        await node.connect(other.listen_addrs[0])
        before = await node._call(connections)
        for _ in range(3):  # once refused by the peer itself, then by what its identify listed
            with pytest.raises(ProtocolRefused, match="does not speak /bitterbot/peers/1"):
                await node.request(other.peer_id, "/bitterbot/peers/1", b"", timeout_s=5)
        assert before and await node._call(connections) == before
    finally:
        await node.stop()
        await other.stop()


async def test_an_attacker_routing_through_two_honest_relays_leaves_them_their_standing() -> None:
    """rogue_a - relay_1 - receiver - relay_2 - rogue_b, the two rogues holding one key. The same
    envelope enters through both relays (the receiver sees a replay), then a burst through relay_1
    that only the receiver's own, stricter rate refuses. Neither is the relays' doing."""
    attacker = Identity.generate()
    relay_settings = GossipRates(skill_rate_per_s=5.0, skill_burst=60)
    # Next to no refill: what the receiver refuses must not depend on how fast a loaded machine delivers.
    # Its burst leaves room for a few replay rounds (each spends one or two tokens) before the burst.
    strict = GossipRates(skill_rate_per_s=0.01, skill_burst=12)
    hosts = [
        P2PHost(attacker, RogueValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), SMALL_MESH),
        P2PHost(
            Identity.generate(),
            MessageValidator(TrustAnchors(), rates=relay_settings, kinds=every_kind()),
            PenaltyBox(),
            SMALL_MESH,
        ),
        P2PHost(
            Identity.generate(),
            MessageValidator(TrustAnchors(), rates=strict, kinds=every_kind()),
            PenaltyBox(),
            SMALL_MESH,
        ),
        P2PHost(
            Identity.generate(),
            MessageValidator(TrustAnchors(), rates=relay_settings, kinds=every_kind()),
            PenaltyBox(),
            SMALL_MESH,
        ),
        P2PHost(attacker, RogueValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), SMALL_MESH),
    ]
    rogue_a, relay_1, receiver, relay_2, rogue_b = hosts
    try:
        await link_line(hosts)
        # Both rogue hosts number their gossip from the clock's second; the attacker sets its second
        # host apart so that the two copies are two gossip messages, not one seen twice.
        rogue_b._pubsub.counter += 1_000_000

        def seen(reason: str) -> int:
            return receiver.validator.snapshot_counters().get(SKILLS_TOPIC, {}).get(reason, 0)

        # First the replay, then the burst: the receiver's rate applies before its replay check, so a
        # second copy that came after the burst would be counted rate-limited, not replayed. The
        # receiver sees a replay only if each relay takes its rogue's copy before the receiver's
        # forward of the other copy reaches it (else that relay drops its copy as a replay itself):
        # a race, so each round sends a fresh envelope by both roads, as an attacker would, until the
        # receiver has seen what the test is about. Bounds on waiting, not timing claims.
        async with asyncio.timeout(90):
            while seen("replayed") < 1:
                twice = skill_envelope(attacker, wall_ms()).encode()
                await rogue_a.publish(SKILLS_TOPIC, twice)
                await rogue_b.publish(SKILLS_TOPIC, twice)
                for _ in range(40):
                    if seen("replayed") >= 1:
                        break
                    await asyncio.sleep(0.05)
        async with asyncio.timeout(90):
            rounds = 0
            while seen("rate_limited") < 20:
                for n in range(25 if rounds == 0 else 5):
                    item = listing(
                        f"Step {rounds}-{n}: check the disk with df -h first", stable_skill_id=f"s{rounds}-{n}"
                    )
                    await rogue_a.publish(SKILLS_TOPIC, skill_envelope(attacker, wall_ms(), item).encode())
                rounds += 1
                for _ in range(40):
                    if seen("rate_limited") >= 20:
                        break
                    await asyncio.sleep(0.05)
        peers = {p.peer_id: p for p in await receiver.peers()}
        for relay in (relay_1, relay_2):
            assert peers[relay.peer_id].banned_until_ms is None
            assert peers[relay.peer_id].penalty_points == 0.0
        assert receiver.counters.bans == 0
    finally:
        for host in hosts:
            await host.stop()


async def test_a_bootstrap_peer_that_starts_later_is_reached_at_the_next_redial(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A CI run of the README walkthrough: the seller started a moment before the manager it
    bootstraps from, its first dial failed, and every redial for the next 60 s was refused by the
    library's negative cache ("recently failed all addresses"), so the walkthrough gave up."""
    import logging
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    early, late_identity = Identity.generate(), Identity.generate()
    address = f"/ip4/127.0.0.1/tcp/{port}/p2p/{late_identity.peer_id}"
    caplog.set_level(logging.INFO, logger="p2p.host")
    settings = HostSettings(listen=LOOPBACK, bootstrap=[address])
    edge = P2PHost(early, MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), settings, redial_s=0.2)
    late = P2PHost(late_identity, MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(),
                   HostSettings(listen=[f"/ip4/127.0.0.1/tcp/{port}"]))  # fmt: skip

    def refusals() -> int:
        return sum("negative cache" in r.getMessage() + str(getattr(r, "fields", "")) for r in caplog.records)

    await edge.start()
    try:
        async with asyncio.timeout(60):  # a bound on waiting, not a claim
            while not any(r.getMessage() == "p2p.bootstrap_unreachable" for r in caplog.records):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await late.start()
        try:
            refused_before = refusals()
            async with asyncio.timeout(60):
                while late.peer_id not in {p.peer_id for p in await edge.peers()} and refusals() == refused_before:  # noqa: ASYNC110 - polling the host
                    await asyncio.sleep(0.05)
            assert refusals() == refused_before, "a redial was refused by the library's negative cache"
            assert late.peer_id in {p.peer_id for p in await edge.peers()}
        finally:
            await late.stop()
    finally:
        await edge.stop()


async def test_a_host_whose_libp2p_run_fails_after_serving_comes_back_and_gossips(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once, under a loaded parallel run, a flooded node's libp2p thread ended and the node stayed off
    the network until restarted by hand. Now the run starts again: here it fails right after it
    served (a failpoint), and the same host is back, reachable, and delivering gossip."""
    monkeypatch.setattr("ground.bridge.RESTART_FIRST_S", 0.2)
    # The host under test starts first and alone reaches the failpoint (its one failure is spent
    # before the peer runs: a host that started earlier could reach it late, on a busy machine).
    monkeypatch.setenv("BITTERBOT_FAILPOINTS", "p2p:host-serving=1")
    monkeypatch.setattr("ground.failpoints._hits", {})
    host = P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), SMALL_MESH)
    peer = P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), SMALL_MESH)
    try:
        await host.start()
        async with asyncio.timeout(60):  # a bound on waiting, not a claim
            while not (host._bridge.restarts == 1 and host._bridge._nursery is not None):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        await peer.start()
        assert "p2p:host-serving" in (host._bridge.last_failure or "")
        await peer.connect(host.listen_addrs[0])
        async with asyncio.timeout(60):
            while await host.mesh_size(SKILLS_TOPIC) < 1 or await peer.mesh_size(SKILLS_TOPIC) < 1:  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        await peer.publish(SKILLS_TOPIC, skill_envelope(peer._identity, wall_ms()).encode())
        delivered = await asyncio.wait_for(host.deliveries.get(), 30)
        assert delivered.outcome.reason is Reason.ACCEPTED and delivered.forwarder == peer.peer_id
        assert host.restarts["count"] == 1  # what status reports (p2p.libp2p_restarts)
    finally:
        await host.stop()
        await peer.stop()
