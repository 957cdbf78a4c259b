"""EigenTrust at scale: the sparse power iteration the node runs, at 10,000 attesters x 256 ratings,
beside the dense n x n form at the largest sizes it can do in this run (time and peak memory).

Ratings go to other attesters (a real network rates peers it meets), drawn at random.
"""

from __future__ import annotations

import random
import time
import tracemalloc
from typing import Any

from p2p.trust.eigentrust import eigentrust, eigentrust_dense

DENSE_LIMIT_BYTES = 3 * 1024**3  # n x n float64 past this is not worth a run on a 24 GiB machine


def graph(attesters: int, ratings: int, seed: int = 11) -> tuple[dict[bytes, dict[bytes, float]], list[bytes]]:
    rng = random.Random(seed)
    keys = [rng.randbytes(32) for _ in range(attesters)]
    local = {k: {rng.choice(keys): rng.randint(1, 1000) / 1000 for _ in range(ratings)} for k in keys}
    return local, keys[:3]


def measure(fn: Any, local: dict[bytes, dict[bytes, float]], pre: list[bytes]) -> dict[str, Any]:
    tracemalloc.start()
    started = time.perf_counter()
    result = fn(local, pre)
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": round(seconds, 3), "peak_mb": round(peak / 2**20, 1), "rounds": result.rounds,
            "converged": result.converged, "keys": len(result.scores)}  # fmt: skip


def run(quick: bool) -> dict[str, Any]:
    sizes = [(1_000, 256), (10_000, 256)] if not quick else [(1_000, 64)]
    out: dict[str, Any] = {"sparse": {}, "dense": {}}
    for attesters, ratings in sizes:
        local, pre = graph(attesters, ratings)
        out["sparse"][f"{attesters}x{ratings}"] = measure(eigentrust, local, pre)
        if 8 * attesters * attesters <= DENSE_LIMIT_BYTES:
            out["dense"][f"{attesters}x{ratings}"] = measure(eigentrust_dense, local, pre)
        else:
            out["dense"][f"{attesters}x{ratings}"] = {
                "skipped": f"n x n float64 would need {8 * attesters**2 / 2**30:.1f} GiB"
            }
    return out
