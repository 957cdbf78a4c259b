"""One benchmark node: a real P2PHost in its own process, driven over stdin, reporting on stdout.

`python -m bench.network.p2p_node SEED_HEX[,SEED_HEX...] MANAGEMENT_KEY_HEX [--rogue]`: one host per
seed (several hosts share a process when many nodes must share two cores). Commands, one JSON
object per line, each naming its host (``"host": i``, the i-th seed; 0 if absent):
{"cmd": "connect", "addr": ...}, {"cmd": "skill"}, {"cmd": "weather", "seq": n},
{"cmd": "flood", "rate": 500, "seconds": 5}, {"cmd": "stats"}; and {"cmd": "quit"}.
Reports, one JSON object per line, each naming its host: ready (address), published (nonce, time),
stats (the deliveries since the last stats, each with its nonce, topic and time; the validator's
counters; the process's id and CPU seconds so far, shared by its hosts). Deliveries are kept until
asked for, not written one by one, so that what the process spends per delivery is the node's, not
this report's. ``--rogue`` runs the named fake ``ForwardAnything`` validator, so its flood leaves
it and meets honest first hops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from typing import Any

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope, pack_body, seal_envelope
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from marketplace.gossip.listing import KIND_SKILL_LISTING, LISTING, SkillListing
from memory.model import content_hash
from p2p.host import P2PHost
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.topics import SKILLS_TOPIC, WEATHER_TOPIC
from p2p.validation import MessageValidator, Outcome
from p2p.verdicts import Reason, Verdict
from p2p.weather import KIND_WEATHER, WEATHER, Weather


class ForwardAnything(MessageValidator):
    """Named fake: an attacker's node that checks nothing before forwarding."""

    def validate(self, topic: str, data: bytes, origin_peer: str, now_ms: int) -> Outcome:
        return Outcome(Verdict.ACCEPT, Reason.ACCEPTED, 0)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def emit(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def skill(identity: Identity, counter: int) -> Envelope:
    text = f"benchmark skill {identity.peer_id} #{counter}: do the thing"
    listing = SkillListing(f"bench.{counter}", 1, content_hash(text), "bench", "", (), "bench", 0, "", 0, 0, text)
    return seal_envelope(identity, KIND_SKILL_LISTING, pack_body(LISTING.body(listing)), now_ms=now_ms())


class BenchHost:
    """One host of this process, with its own key, validator, deliveries and message counter."""

    def __init__(self, slot: int, seed_hex: str, management_hex: str, rogue: bool) -> None:
        self.slot = slot
        self.identity = Identity.from_seed(bytes.fromhex(seed_hex))
        anchors = TrustAnchors([bytes.fromhex(management_hex)])
        self.validator = (
            ForwardAnything(anchors, kinds=every_kind())
            if rogue
            else MessageValidator(anchors, kinds=every_kind(), own_key=self.identity.public_key)
        )
        # Every node of the bench is on 127.0.0.1, one address: the per-IP bound would keep them apart.
        settings = HostSettings(listen=LOOPBACK, degree=4, degree_low=2, degree_high=8, connections_per_ip=10_000)
        self.host = P2PHost(self.identity, self.validator, PenaltyBox(), settings)
        self.delivered: list[tuple[str, str, float]] = []
        self.counter = 0

    def emit(self, doc: dict[str, Any]) -> None:
        emit({**doc, "host": self.slot})

    async def report(self) -> None:
        while True:
            delivery = await self.host.deliveries.get()
            envelope = delivery.outcome.envelope
            if envelope is not None:
                self.delivered.append((delivery.topic, envelope.nonce.hex(), time.time() * 1000))

    async def publish(self, kind: str, seq: int) -> None:
        self.counter += 1
        if kind == "skill":
            envelope, topic = skill(self.identity, self.counter), SKILLS_TOPIC
        else:
            t = now_ms()
            body = pack_body(WEATHER.body(Weather(900, 1, "bench", t, seq)))
            envelope, topic = seal_envelope(self.identity, KIND_WEATHER, body, now_ms=t), WEATHER_TOPIC
        sent = time.time() * 1000
        await self.host.publish(topic, envelope.encode())
        self.emit({"event": "published", "topic": topic, "nonce": envelope.nonce.hex(), "t": sent})

    async def flood(self, rate: float, seconds: float) -> None:
        # Publish in 20 ms ticks: a sleep per message cannot keep up with 500/s.
        started = time.monotonic()
        sent_count = 0
        while (elapsed := time.monotonic() - started) < seconds:
            while sent_count < rate * elapsed:
                self.counter += 1
                with contextlib.suppress(Exception):
                    await self.host.publish(SKILLS_TOPIC, skill(self.identity, self.counter).encode())
                sent_count += 1
            await asyncio.sleep(0.02)
        self.emit({"event": "flooded", "sent": sent_count, "seconds": time.monotonic() - started})

    def stats(self) -> None:
        deliveries = [{"topic": topic, "nonce": nonce, "t": t} for topic, nonce, t in self.delivered]
        self.delivered.clear()
        self.emit({"event": "stats", "counters": self.validator.snapshot_counters(), "bans": self.host.counters.bans,
                   "cpu_s": time.process_time(), "pid": os.getpid(), "deliveries": deliveries})  # fmt: skip


async def main(seeds_hex: str, management_hex: str, rogue: bool) -> None:
    hosts = [BenchHost(slot, seed, management_hex, rogue) for slot, seed in enumerate(seeds_hex.split(","))]
    for bench_host in hosts:
        await bench_host.host.start()
        bench_host.emit({"event": "ready", "addr": bench_host.host.listen_addrs[0]})
    reporters = [asyncio.create_task(h.report()) for h in hosts]
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        command = json.loads(line)
        target = hosts[int(command.get("host", 0))]
        if command["cmd"] == "connect":
            await target.host.connect(command["addr"])
        elif command["cmd"] in ("skill", "weather"):
            await target.publish(command["cmd"], int(command.get("seq", 0)))
        elif command["cmd"] == "flood":
            await target.flood(float(command["rate"]), float(command["seconds"]))
        elif command["cmd"] == "stats":
            target.stats()
        elif command["cmd"] == "quit":
            break
    for task in reporters:
        task.cancel()
    for bench_host in hosts:
        await bench_host.host.stop()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], "--rogue" in sys.argv[3:]))
