"""The device that already holds the memory, in its own process, for ``bench.memory.sync``.

`python -m bench.memory.sync_peer DIR COUNT JOINER_PUBLIC_KEY_HEX [EMBEDDER]`: stores COUNT
conversation turns (LoCoMo, ../shared/data/locomo-dev), embeds them (timing the CPU that takes),
founds a device group with the joiner, journals everything, and serves the sync exchange on a real
libp2p host on 127.0.0.1. It writes ``DIR/ready.json`` (its address, peer id, the member list and
the keys sealed to the joiner, and what embedding cost) and serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from bench.memory.sync_texts import turns
from crypto.anchors import TrustAnchors
from crypto.device_group import Member
from crypto.identity import Identity
from ground.authority import Speaker
from memory.devices.keeper import DeviceGroupKeeper
from memory.embedders import make_embedder
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin
from memory.sync.replica import Replica
from memory.sync.schema import SYNC_SCHEMA
from memory.sync.settings import SyncSettings
from memory.sync.syncer import Syncer
from memory.sync.wire import PROTOCOL
from p2p.host import P2PHost
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator


async def main(folder: Path, count: int, joiner: bytes, embedder_name: str) -> None:
    identity = Identity.generate()
    embedder = make_embedder(embedder_name)
    store = await IntakeStore.open(folder / "source.db", embedder, schemas=(SYNC_SCHEMA,))
    texts = turns(count)
    items = [NewCrystal(text=t, origin=Origin.SESSION, speaker=Speaker.PERSON_IN_TRANSCRIPT) for t in texts]
    await store.remember_many(items)
    cpu, wall = time.process_time(), time.perf_counter()
    embedded = await store.embed_backlog()
    embed_cpu_s, embed_wall_s = time.process_time() - cpu, time.perf_counter() - wall
    keeper = DeviceGroupKeeper(identity, folder / "source-group.bin")
    keeper.open()
    keeper.admit(Member(joiner, "joiner"), "source")
    replica = Replica(store, identity.peer_id)
    await replica.open()
    await replica.start()
    wall = time.perf_counter()
    said = await replica.write_down(batch=2_000)
    journal_s = time.perf_counter() - wall
    host = P2PHost(identity, MessageValidator(TrustAnchors()), PenaltyBox(), HostSettings(listen=LOOPBACK))
    syncer = Syncer(replica, keeper, host, identity.peer_id, SyncSettings())
    host.serve(PROTOCOL, syncer.answer)
    await host.start()
    view = keeper.view()
    assert view is not None
    ready = {
        "addr": host.listen_addrs[0],
        "peer_id": identity.peer_id,
        "public_key": identity.public_key.hex(),
        "member_list": view.members.pack().hex(),
        "keys": {str(k): v.hex() for k, v in keeper.sealed_keys_for(joiner).items()},
        "crystals": count,
        "embedded": embedded,
        "operations": len(said),
        "embed_cpu_s": round(embed_cpu_s, 2),
        "embed_wall_s": round(embed_wall_s, 2),
        "journal_s": round(journal_s, 2),
        "text_bytes": sum(len(t.encode()) for t in texts),
    }
    (folder / "ready.json").write_text(json.dumps(ready))
    try:
        await asyncio.to_thread(sys.stdin.read)  # until the benchmark closes it
    finally:
        await host.stop()
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]))
