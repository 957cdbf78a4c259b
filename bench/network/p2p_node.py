"""One benchmark node: a real P2PHost in its own process, driven over stdin, reporting on stdout.

`python -m bench.network.p2p_node SEED_HEX MANAGEMENT_KEY_HEX [--rogue]`. Commands, one JSON
object per line: {"cmd": "connect", "addr": ...}, {"cmd": "skill"}, {"cmd": "weather",
"seq": n}, {"cmd": "flood", "rate": 500, "seconds": 5}, {"cmd": "stats"}, {"cmd": "quit"}.
Reports, one JSON object per line: ready (address), published (nonce, time), stats (the
deliveries since the last stats, each with its nonce, topic and time; the validator's counters;
the process's CPU seconds so far). Deliveries are kept until asked for, not written one by one,
so that what the process spends per delivery is the node's, not this report's. ``--rogue`` runs
the named fake ``ForwardAnything`` validator, so its flood leaves it and meets honest first hops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from typing import Any

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope, pack_body, seal_envelope
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from marketplace.gossip.listing import KIND_SKILL_LISTING, LISTING, SkillListing
from memory.model import content_hash
from p2p.host import HostSettings, P2PHost
from p2p.network.bounds import ConnectionBounds
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


async def main(seed_hex: str, management_hex: str, rogue: bool) -> None:
    identity = Identity.from_seed(bytes.fromhex(seed_hex))
    anchors = TrustAnchors([bytes.fromhex(management_hex)])
    validator = (
        ForwardAnything(anchors, kinds=every_kind())
        if rogue
        else MessageValidator(anchors, kinds=every_kind(), own_key=identity.public_key)
    )
    # Every node of the bench is on 127.0.0.1, one address: the per-IP bound would keep them apart.
    one_address = ConnectionBounds(per_ip=10_000)
    host = P2PHost(
        identity, validator, PenaltyBox(), HostSettings(degree=4, degree_low=2, degree_high=8, limits=one_address)
    )
    await host.start()
    emit({"event": "ready", "addr": host.listen_addrs[0]})

    delivered: list[tuple[str, str, float]] = []

    async def report() -> None:
        while True:
            delivery = await host.deliveries.get()
            envelope = delivery.outcome.envelope
            if envelope is not None:
                delivered.append((delivery.topic, envelope.nonce.hex(), time.time() * 1000))

    reporter = asyncio.create_task(report())
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    counter = 0
    while line := await reader.readline():
        command = json.loads(line)
        if command["cmd"] == "connect":
            await host.connect(command["addr"])
        elif command["cmd"] in ("skill", "weather"):
            counter += 1
            if command["cmd"] == "skill":
                envelope, topic = skill(identity, counter), SKILLS_TOPIC
            else:
                t = now_ms()
                body = pack_body(WEATHER.body(Weather(900, 1, "bench", t, int(command["seq"]))))
                envelope, topic = seal_envelope(identity, KIND_WEATHER, body, now_ms=t), WEATHER_TOPIC
            sent = time.time() * 1000
            await host.publish(topic, envelope.encode())
            emit({"event": "published", "topic": topic, "nonce": envelope.nonce.hex(), "t": sent})
        elif command["cmd"] == "flood":
            # Publish in 20 ms ticks: a sleep per message cannot keep up with 500/s.
            rate, seconds = float(command["rate"]), float(command["seconds"])
            started = time.monotonic()
            sent_count = 0
            while (elapsed := time.monotonic() - started) < seconds:
                while sent_count < rate * elapsed:
                    counter += 1
                    with contextlib.suppress(Exception):
                        await host.publish(SKILLS_TOPIC, skill(identity, counter).encode())
                    sent_count += 1
                await asyncio.sleep(0.02)
            emit({"event": "flooded", "sent": sent_count, "seconds": time.monotonic() - started})
        elif command["cmd"] == "stats":
            deliveries = [{"topic": topic, "nonce": nonce, "t": t} for topic, nonce, t in delivered]
            delivered.clear()
            emit({"event": "stats", "counters": validator.snapshot_counters(), "bans": host.counters.bans,
                  "cpu_s": time.process_time(), "deliveries": deliveries})  # fmt: skip
        elif command["cmd"] == "quit":
            break
    reporter.cancel()
    await host.stop()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], "--rogue" in sys.argv[3:]))
