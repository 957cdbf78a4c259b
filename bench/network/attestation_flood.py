"""An attacker's process: libp2p peers that connect to a node and each gossip one trust attestation,
signed by its own fresh key and rating 256 made-up keys (the flood of issue 13, finding 1).

    python -m bench.network.attestation_flood ADDRESS --keys 10 [--seed S]

With ``--seed`` the signing keys are derived from it (key i from sha256(seed || i)), so a test can
name them as management keys beforehand; without it they are fresh. Prints one JSON line with what
it published, then keeps its connections open until its stdin ends, so the node can read every
frame however slowly it runs; it exits by itself too (every wait has a deadline).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.network.p2p_node import ForwardAnything
from crypto.anchors import TrustAnchors
from crypto.envelope import pack_body, seal_envelope
from crypto.identity import Identity
from ground.clock import wall_clock_ms
from marketplace.gossip.kinds import every_kind
from p2p.host import P2PHost
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.topics import TRUST_TOPIC
from p2p.trust.attestation import ATTESTATION, KIND_TRUST_ATTESTATION, MAX_ATTESTED_PEERS, TrustAttestation

#: How long a peer waits to be in the node's mesh before it publishes anyway. The node keeps at most
#: its mesh's upper degree of the 40 and prunes the rest; a pruned peer waits out a 60 s backoff, so
#: one that had not yet published when pruned (20 hosts sharing a process on a busy machine) waited
#: for good. Published outside the mesh, the message can reach the node only by gossip (IHAVE, then
#: the node's IWANT), which lost some in one run: a test that needs every message gives the node a
#: mesh as large as the attackers (``[p2p] degree_high``).
MESH_WAIT_S = 20
#: How long an attacker stays connected after publishing when nobody ends its stdin.
STAY_DEADLINE_S = 300


def signing_key(seed: bytes | None, index: int) -> Identity:
    if seed is None:
        return Identity.generate()
    return Identity.from_seed(hashlib.sha256(seed + index.to_bytes(4, "big")).digest())


def attestation(author: Identity) -> bytes:
    """One valid signed attestation rating the most peers a message may rate, all made up."""
    ratings = tuple((os.urandom(32), 1000) for _ in range(MAX_ATTESTED_PEERS))
    body = pack_body(ATTESTATION.body(TrustAttestation(ratings)))
    return seal_envelope(author, KIND_TRUST_ATTESTATION, body, now_ms=wall_clock_ms()).encode()


async def attest_once(address: str, author: Identity, published: asyncio.Event, release: asyncio.Event) -> None:
    """One peer: its libp2p identity is the signing key, as gossip requires of an author. It stays
    connected until ``release``: a fixed pause here (2 s) lost a whole attacker's frames when the
    machine was busy, and a test waiting for the node to judge them then timed out."""
    validator = ForwardAnything(TrustAnchors(), kinds=every_kind())
    host = P2PHost(author, validator, PenaltyBox(), HostSettings(listen=LOOPBACK))
    await host.start()
    try:
        await host.connect(address)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(MESH_WAIT_S):
                while await host.mesh_size(TRUST_TOPIC) < 1:  # noqa: ASYNC110 - polling the library's mesh
                    await asyncio.sleep(0.1)
        await host.publish(TRUST_TOPIC, attestation(author))
        published.set()
        await release.wait()
    finally:
        await host.stop()


async def flood(address: str, keys: int, seed: bytes | None) -> None:
    """Publish from ``keys`` peers, print what was published, and stay until stdin ends."""
    release = asyncio.Event()
    done = [asyncio.Event() for _ in range(keys)]
    async with asyncio.TaskGroup() as peers:
        for index in range(keys):
            peers.create_task(attest_once(address, signing_key(seed, index), done[index], release))
        for event in done:
            await event.wait()
        print(json.dumps({"published": keys, "ratings_each": MAX_ATTESTED_PEERS}), flush=True)
        stdin_ended = asyncio.Event()
        loop = asyncio.get_running_loop()

        def read_to_the_end() -> None:
            sys.stdin.read()
            loop.call_soon_threadsafe(stdin_ended.set)

        # A daemon thread: a blocked read must not keep the process alive past its deadline.
        threading.Thread(target=read_to_the_end, daemon=True).start()
        try:
            async with asyncio.timeout(STAY_DEADLINE_S):
                await stdin_ended.wait()
        except TimeoutError:
            pass
        release.set()


def seed_of(attacker: int) -> str:
    return f"flood-{attacker}"


def seeded_keys(attackers: int, keys_each: int) -> list[Identity]:
    """The keys ``run_attackers(..., seeded=True)`` signs with, to name them as management keys."""
    return [signing_key(seed_of(n).encode(), i) for n in range(attackers) for i in range(keys_each)]


@contextmanager
def connected_attackers(address: str, *, attackers: int, keys_each: int, seeded: bool) -> Iterator[int]:
    """Attacker processes side by side, each with ``keys_each`` peers: how many attestations they
    published, while every one of them is still connected. Leaving ends their stdin: they close
    their connections and exit."""
    errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - closed below, after the processes exit
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.network.attestation_flood", address, "--keys", str(keys_each)]
            + (["--seed", seed_of(n)] if seeded else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        for n in range(attackers)
    ]
    try:
        published = 0
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # its one line, once it published; "" if it failed first
            if not line:
                proc.wait(timeout=60)
                errors.seek(0)
                raise RuntimeError(f"an attacker failed: {errors.read()[-2000:]}")
            published += json.loads(line)["published"]
        yield published
    finally:
        for proc in procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        errors.close()


def peak_rss_kb(pid: int) -> int:
    """A process's peak resident set so far (VmHWM), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("address", help="the node's multiaddr, with /p2p/<peer id>")
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--seed", default=None)
    args = parser.parse_args(argv)
    seed = args.seed.encode() if args.seed is not None else None
    asyncio.run(flood(args.address, args.keys, seed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
