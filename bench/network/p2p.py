"""Gossip across 8 real nodes in separate processes on 127.0.0.1, and the validator's throughput.

Nodes are ``bench.network.p2p_node`` processes (a real P2PHost each); node i dials nodes
i-1 and i-2, so messages cross up to four hops. Node 0 holds the management key.
Phases, timed with the wall clock all processes share:
1. skills: honest nodes publish round-robin at 20 msg/s; latency to every other node.
2. weather: node 0 broadcasts one event per second; time until all 7 others have it.
3. flood: a 9th process (a named fake that forwards anything) dials nodes 0 and 4 and
   publishes 500 msg/s from its own key while honest nodes go on at 20 msg/s;
   counts honest messages that did not reach every honest node.
Validator throughput is measured in this process beside raw PyNaCl verify of the same
signed bytes. Goals (issue 5): weather p99 to all 8 under 1 s; no honest message lost
during the flood.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import nacl.bindings

from bench.network.p2p_node import skill
from bench.timing import percentiles_ms, rate_per_s
from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from ground.rates import RateLimit
from marketplace.gossip.kinds import every_kind
from p2p.topics import SKILLS_TOPIC
from p2p.validation import MessageValidator, ValidatorSettings

NODES = 8
HONEST_RATE = 20.0
FLOOD_RATE = 500.0
GOAL_WEATHER_P99_MS = 1_000.0
ROOT = Path(__file__).resolve().parents[2]  # the repository: node processes import bench.network.p2p_node


class NodeProcess:
    def __init__(self, index: int, proc: asyncio.subprocess.Process) -> None:
        self.index = index
        self.proc = proc
        self.addr = ""
        self.ready = asyncio.Event()
        self.events: list[dict[str, Any]] = []

    async def send(self, **command: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(command).encode() + b"\n")
        await self.proc.stdin.drain()

    async def read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            event = json.loads(line)
            if event["event"] == "ready":
                self.addr = event["addr"]
                self.ready.set()
            else:
                self.events.append(event)


async def _spawn(index: int, seed: bytes, management: str, rogue: bool) -> NodeProcess:
    args = [sys.executable, "-m", "bench.network.p2p_node", seed.hex(), management, *(["--rogue"] if rogue else [])]
    proc = await asyncio.create_subprocess_exec(
        *args,
        cwd=ROOT,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    return NodeProcess(index, proc)


def _latencies(nodes: list[NodeProcess], topic: str, publishers: set[int]) -> tuple[list[float], list[float], int]:
    """Per delivery latencies, per message time-to-all, and messages that missed some honest node."""
    published: dict[str, tuple[int, float]] = {}
    for node in nodes:
        for e in node.events:
            if e["event"] == "published" and e["topic"] == topic and node.index in publishers:
                published[e["nonce"]] = (node.index, e["t"])
    received: dict[str, dict[int, float]] = defaultdict(dict)
    for node in nodes:
        for e in node.events:
            if e["event"] == "delivery" and e["topic"] == topic and e["nonce"] in published:
                received[e["nonce"]][node.index] = e["t"]
    each: list[float] = []
    to_all: list[float] = []
    missing = 0
    for nonce, (origin, sent) in published.items():
        others = [n.index for n in nodes if n.index != origin]
        got = received.get(nonce, {})
        each.extend((got[i] - sent) / 1000 for i in others if i in got)
        if all(i in got for i in others):
            to_all.append((max(got[i] for i in others) - sent) / 1000)
        else:
            missing += 1
    return each, to_all, missing


async def _network(quick: bool) -> dict[str, Any]:
    seeds = [os.urandom(32) for _ in range(NODES + 1)]
    management = Identity.from_seed(seeds[0]).public_key.hex()
    nodes = [await _spawn(i, seed, management, rogue=i == NODES) for i, seed in enumerate(seeds)]
    readers = [asyncio.create_task(n.read()) for n in nodes]
    try:
        async with asyncio.timeout(60):
            for node in nodes:
                await node.ready.wait()
        honest, rogue = nodes[:NODES], nodes[NODES]
        for node in honest[1:]:
            for back in (1, 2):
                if node.index - back >= 0:
                    await node.send(cmd="connect", addr=honest[node.index - back].addr)
        await asyncio.sleep(4)  # a few 1 s heartbeats: meshes form

        skills = 20 if quick else 100
        for i in range(skills):
            await honest[1 + i % (NODES - 1)].send(cmd="skill")
            await asyncio.sleep(1 / HONEST_RATE)
        weathers = 4 if quick else 12
        for seq in range(1, weathers + 1):
            await honest[0].send(cmd="weather", seq=seq)
            await asyncio.sleep(1.0)  # the weather rate limit is 1/s per management key
        await asyncio.sleep(2)
        skill_each, skill_all, skill_missing = _latencies(honest, SKILLS_TOPIC, set(range(1, NODES)))
        weather_each, weather_all, weather_missing = _latencies(honest, "bitterbot/weather/1", {0})
        for node in honest:
            node.events.clear()

        await rogue.send(cmd="connect", addr=honest[0].addr)
        await rogue.send(cmd="connect", addr=honest[4].addr)
        await asyncio.sleep(3)
        flood_s = 3 if quick else 5
        await rogue.send(cmd="flood", rate=FLOOD_RATE, seconds=flood_s)
        honest_during = int(HONEST_RATE * flood_s)
        for i in range(honest_during):
            await honest[1 + i % (NODES - 1)].send(cmd="skill")
            await asyncio.sleep(1 / HONEST_RATE)
        await asyncio.sleep(4)
        _, flood_all, flood_missing = _latencies(honest, SKILLS_TOPIC, set(range(1, NODES)))
        for node in honest:
            await node.send(cmd="stats")
        await asyncio.sleep(1)
        bans = sum(e["bans"] for n in honest for e in n.events if e["event"] == "stats")
        flood_events = [e for e in rogue.events if e["event"] == "flooded"]
        flooded = sum(e["sent"] for e in flood_events)
        flood_rate = round(flooded / max(e["seconds"] for e in flood_events)) if flood_events else 0
    finally:
        for node in nodes:
            if node.proc.returncode is None:
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await node.send(cmd="quit")
        for node in nodes:
            try:
                await asyncio.wait_for(node.proc.wait(), 20)
            except TimeoutError:
                node.proc.kill()
        for task in readers:
            task.cancel()
    weather_p99 = percentiles_ms(weather_all)["p99_ms"] if weather_all else float("inf")
    return {
        "nodes": NODES,
        "skills": {"messages": skills, "missing": skill_missing, "per_delivery": percentiles_ms(skill_each),
                   "to_all_nodes": percentiles_ms(skill_all) if skill_all else None},
        "weather": {"messages": weathers, "missing": weather_missing, "per_delivery": percentiles_ms(weather_each),
                    "to_all_nodes": percentiles_ms(weather_all) if weather_all else None},
        "flood": {"rogue_sent": flooded, "rogue_target_per_s": FLOOD_RATE, "rogue_achieved_per_s": flood_rate,
                  "honest_messages": honest_during,
                  "honest_lost": flood_missing, "honest_to_all_nodes": percentiles_ms(flood_all) if flood_all else None,
                  "bans_of_the_rogue": bans},
        "goal_weather_p99_ms": GOAL_WEATHER_P99_MS,
        "goal_met": weather_p99 < GOAL_WEATHER_P99_MS and weather_missing == 0 and flood_missing == 0,
    }  # fmt: skip


def _validator_throughput(quick: bool) -> dict[str, Any]:
    count = 500 if quick else 3_000
    authors = [Identity.generate() for _ in range(50)]
    now = time.time_ns() // 1_000_000
    envelopes = [skill(authors[i % 50], i) for i in range(count)]
    wires = [(e.encode(), e.author, authors[i % 50].peer_id) for i, e in enumerate(envelopes)]
    signed = [(e.sig + e.signing_bytes(), e.author) for e in envelopes]
    # Rates out of the way (per author and for strangers as a crowd): this measures the checks' cost.
    unlimited = ValidatorSettings(
        skill_rate=RateLimit(1e9, 10**9), strangers_skill_rate=RateLimit(1e9, 10**9), replay_entries=10**7
    )

    def validate_all() -> int:
        validator = MessageValidator(
            TrustAnchors(), unlimited, kinds=every_kind()
        )  # fresh: the replay guard must not see repeats
        for data, _, peer in wires:
            outcome = validator.validate(SKILLS_TOPIC, data, peer, now)
            if outcome.reason.value != "accepted":
                raise RuntimeError(f"the validator refused a valid envelope: {outcome.reason.value}")
        return count

    def verify_all() -> int:
        for message, key in signed:
            nacl.bindings.crypto_sign_open(message, key)
        return count

    validator_rate = rate_per_s(validate_all, rounds=3)
    raw_rate = rate_per_s(verify_all, rounds=3)
    return {
        "validator_per_s": round(validator_rate),
        "baseline_raw_pynacl_verify_per_s": round(raw_rate),
        "ratio_to_raw": round(validator_rate / raw_rate, 3),
    }


def run(quick: bool) -> dict[str, Any]:
    return {"validator": _validator_throughput(quick), "network": asyncio.run(_network(quick))}
