"""Memory on all of a person's devices (issue 51): `python -m bench sync [--quick]`.

A device that holds COUNT memories (10,000 LoCoMo turns; --quick: 400), embedded with MiniLM, runs
in its own process (``bench.memory.sync_peer``) behind a real libp2p host on 127.0.0.1. A device
that joins its group, in this process, takes all of it through the sync exchange and never runs
the model (the vectors travel). Figures, each beside its baseline from the same run:
- initial sync: the wall time until the joiner holds the same state (digest), and the time to its
  first search that finds something; goal under 60 s for 10,000;
- the joiner's CPU for the whole sync, beside the CPU the source spent embedding the same texts
  (what the joiner would spend if it embedded them itself);
- bytes on the wire per crystal (asks and answers, sealed and padded), beside the crystal's own
  words, and how many of those bytes are its vector;
- a change seen on another online device: two devices in this process with their loops running
  (the default 250 ms journal), from ``remember`` on one until the other holds it; p50 and p99
  over 40 changes (--quick: 10); goal p99 under 2 s.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.timing import percentiles_ms
from crypto.anchors import TrustAnchors
from crypto.device_group import Member
from crypto.identity import Identity
from ground.authority import Speaker
from memory.devices.keeper import DeviceGroupKeeper
from memory.embedders import make_embedder
from memory.errors import CrystalNotFound
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin
from memory.retrieval.query import SearchRequest
from memory.retrieval.search import search
from memory.sync.replica import Replica
from memory.sync.rows import all_ops
from memory.sync.schema import SYNC_SCHEMA
from memory.sync.settings import SyncSettings
from memory.sync.syncer import Syncer
from memory.sync.wire import PROTOCOL, ops_fit
from p2p.host import P2PHost
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator

COUNT, QUICK_COUNT = 10_000, 400
CHANGES, QUICK_CHANGES = 40, 10
GOAL_INITIAL_S = 60.0
GOAL_CHANGE_P99_MS = 2_000.0


class CountingHost:
    """The joiner's host, counting the bytes of every ask and answer it carries."""

    def __init__(self, host: P2PHost) -> None:
        self.host = host
        self.bytes = 0
        self.asks = 0

    async def request(
        self, peer_id: str, protocol: str, payload: bytes, *, timeout_s: float = 15.0, max_bytes: int = 1 << 20
    ) -> bytes:
        answer = await self.host.request(peer_id, protocol, payload, timeout_s=timeout_s, max_bytes=max_bytes)
        self.bytes += len(payload) + len(answer)
        self.asks += 1
        return answer


def _host(identity: Identity) -> P2PHost:
    return P2PHost(identity, MessageValidator(TrustAnchors()), PenaltyBox(), HostSettings(listen=LOOPBACK))


def _source(folder: Path, count: int, me: Identity) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bench.memory.sync_peer", str(folder), str(count), me.public_key.hex(), "minilm"],
        stdin=subprocess.PIPE,
        text=True,
    )


async def _initial(folder: Path, count: int, me: Identity, source: subprocess.Popen[str]) -> dict[str, Any]:
    try:
        ready_file = folder / "ready.json"
        deadline = time.monotonic() + 1_800
        while not ready_file.exists():
            if source.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the source device did not get ready")
            await asyncio.sleep(0.2)
        ready = json.loads(ready_file.read_text())
        embedder = make_embedder("minilm")  # the same space; this device never embeds a stored crystal
        store = await IntakeStore.open(folder / "joiner.db", embedder, schemas=(SYNC_SCHEMA,))
        keeper = DeviceGroupKeeper(me, folder / "joiner-group.bin")
        keeper.open()
        keys = {int(k): bytes.fromhex(v) for k, v in ready["keys"].items()}
        keeper.join(bytes.fromhex(ready["public_key"]), bytes.fromhex(ready["member_list"]), keys)
        replica = Replica(store, me.peer_id)
        await replica.open()
        await replica.start()
        host = _host(me)
        line = CountingHost(host)
        syncer = Syncer(replica, keeper, line, me.peer_id, SyncSettings())
        await host.start()
        try:
            await host.connect(ready["addr"])
            first_search: list[float] = []
            started = time.perf_counter()
            cpu = time.process_time()

            async def searching() -> None:
                while not first_search:
                    hits = await search(store, SearchRequest(query="what did Caroline say about her plans", limit=5))
                    if hits:
                        first_search.append(time.perf_counter() - started)
                    await asyncio.sleep(0.05)

            looking = asyncio.create_task(searching())
            pulled = await syncer.pull(ready["peer_id"])
            sync_s = time.perf_counter() - started
            sync_cpu = time.process_time() - cpu
            await asyncio.wait_for(looking, 30)
            ops = await all_ops(store.reader())
            vector_bytes = ops_fit([op for op in ops if op.change.value == "vector"])
            report = await syncer.report()
            same = report[ready["peer_id"]]["in_sync"]
            backlog = await store.backlog_size()
        finally:
            await host.stop()
            await store.close()
    finally:
        if source.stdin is not None:
            source.stdin.close()
        source.wait(timeout=60)
    return {
        "crystals": count,
        "operations": pulled.taken,
        "in_sync": same,
        "joiner_backlog_after": backlog,
        "asks": pulled.asks,
        "seconds": round(sync_s, 2),
        "first_search_s": round(first_search[0], 2),
        "goal_seconds": GOAL_INITIAL_S if count == COUNT else None,
        "joiner_cpu_s": round(sync_cpu, 2),
        "baseline_embed_cpu_s": ready["embed_cpu_s"],
        "baseline_embed_wall_s": ready["embed_wall_s"],
        "source_journal_s": ready["journal_s"],
        "wire_bytes_per_crystal": round(line.bytes / count),
        "of_which_vector": round(vector_bytes / count),
        "text_bytes_per_crystal": round(ready["text_bytes"] / count),
    }


async def _changes(folder: Path, changes: int) -> dict[str, Any]:
    embedder = make_embedder("hashing")
    devices = []
    ids = [Identity.generate(), Identity.generate()]
    for i, identity in enumerate(ids):
        store = await IntakeStore.open(folder / f"live{i}.db", embedder, schemas=(SYNC_SCHEMA,))
        keeper = DeviceGroupKeeper(identity, folder / f"live{i}-group.bin")
        keeper.open()
        devices.append((identity, store, keeper))
    first, second = devices
    view = first[2].admit(Member(second[0].public_key, "second"), "first")
    second[2].join(first[0].public_key, view.members.pack(), first[2].sealed_keys_for(second[0].public_key))
    hosts, syncers = [], []
    for identity, store, keeper in devices:
        replica = Replica(store, identity.peer_id)
        await replica.open()
        host = _host(identity)
        syncer = Syncer(replica, keeper, host, identity.peer_id, SyncSettings())
        host.serve(PROTOCOL, syncer.answer)
        hosts.append(host)
        syncers.append(syncer)
    for host in hosts:
        await host.start()
    await hosts[1].connect(hosts[0].listen_addrs[0])
    loops = [asyncio.create_task(s.run()) for s in syncers]
    samples: list[float] = []
    try:
        await asyncio.sleep(1.0)  # the first round: they have met
        for i in range(changes):
            writer, reader = (first, second) if i % 2 == 0 else (second, first)
            started = time.perf_counter()
            new = NewCrystal(text=f"Change {i}: the meeting moved to room {i * 3}", origin=Origin.USER_INPUT,
                             speaker=Speaker.PERSON)  # fmt: skip
            crystal_id = (await writer[1].remember(new)).crystal.id
            syncers[0 if writer is first else 1].nudge()
            while True:
                try:
                    await reader[1].get(crystal_id)
                    break
                except CrystalNotFound:
                    await asyncio.sleep(0.01)
                if time.perf_counter() - started > 30:
                    raise RuntimeError(f"change {i} did not arrive within 30 s")
            samples.append(time.perf_counter() - started)
            await asyncio.sleep(0.2)
    finally:
        for task in loops:
            task.cancel()
        await asyncio.gather(*loops, return_exceptions=True)
        for host in hosts:
            await host.stop()
        for _, store, _ in devices:
            await store.close()
    return {"changes": changes, **percentiles_ms(samples), "goal_p99_ms": GOAL_CHANGE_P99_MS}


def run(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        count, me = QUICK_COUNT if quick else COUNT, Identity.generate()
        initial = asyncio.run(_initial(folder, count, me, _source(folder, count, me)))
    with tempfile.TemporaryDirectory() as tmp:
        change = asyncio.run(_changes(Path(tmp), QUICK_CHANGES if quick else CHANGES))
    return {"initial_sync": initial, "change_seen": change}
