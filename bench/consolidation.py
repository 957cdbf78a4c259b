"""One consolidation cycle over 100K crystals, beside a plain full-table read of the same rows.

The store is filled with synthetic crystals that look like a node's after two
months: stored over the past 60 days, access counts Zipf-distributed, 2% with a
TTL, 1,000 near-duplicate pairs (vectors at cosine ~0.95, linked in the graph as
embedding would have linked them) among 50,000 ordinary ``related_to`` edges.
The vectors come from ``SyntheticEmbedder`` (a named fake: random unit vectors).

Timed in the same run:
- baseline: ``SELECT * FROM crystals``, every row fetched into Python on a reader;
- the first cycle (many expirations and merges) and a second, steady-state one.
Goal (issue 4): a cycle under 3 s and within 3x of the plain read.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory_store import DIM, SyntheticEmbedder, synthetic_texts
from memory.dynamics.consolidation import consolidate
from memory.dynamics.importance import DAY_MS
from memory.intake.store import IntakeStore
from memory.model import Hormones, Lifespan, NewCrystal

SIZE = 100_000
QUICK_SIZE = 10_000
DUPLICATE_PAIRS = 1_000
RELATED_EDGES = 50_000
GOAL_S = 3.0
GOAL_RATIO = 3.0


async def _fill(store: IntakeStore, size: int, rng: random.Random) -> None:
    texts = synthetic_texts(size, rng)
    items = [
        NewCrystal(t, lifespan=Lifespan.TTL, ttl_ms=rng.randint(1, 90) * DAY_MS)
        if rng.random() < 0.02
        else NewCrystal(t)
        for t in texts
    ]
    await store.remember_many(items)
    await store.embed_backlog(batch_size=5000)
    nprng = np.random.default_rng(size)
    now = store.now_ms()
    async with store.transaction() as db:
        # Two months of history: when each crystal arrived, and how often it was used since.
        await db.executemany(
            "UPDATE crystals SET stored_at_ms = ?, access_count = ?, "
            "last_access_ms = CASE WHEN ? > 0 THEN ? ELSE NULL END WHERE rowid = ?",
            [
                (stored, count, count, stored + rng.randint(0, now - stored), rowid)
                for rowid in range(1, size + 1)
                for stored, count in [(now - rng.randint(0, 60 * DAY_MS), int(nprng.zipf(1.6)) - 1)]
            ],
        )
        # A TTL runs from when the crystal was stored; anything used has been retrieved, so activated.
        await db.execute(
            "UPDATE crystals SET expires_at_ms = stored_at_ms + (expires_at_ms - updated_at_ms) "
            "WHERE expires_at_ms IS NOT NULL"
        )
        await db.execute("UPDATE crystals SET lifecycle = 'activated' WHERE access_count > 0")
        async with db.execute("SELECT id FROM crystals ORDER BY rowid") as cursor:
            ids = [r[0] for r in await cursor.fetchall()]
        pairs = rng.sample(range(1, size + 1), 2 * DUPLICATE_PAIRS)
        vectors = await store.vectors.vectors_of(db, pairs[1::2])
        twins = []
        for a, b in zip(pairs[0::2], pairs[1::2], strict=True):
            near = vectors[b] + 0.33 * nprng.standard_normal(DIM).astype(np.float32) / np.sqrt(DIM)
            near /= np.linalg.norm(near)
            twins.append((a, near, float(near @ vectors[b])))
        await store.vectors.put(db, [(rowid, vector) for rowid, vector, _ in twins])
        edges = [(ids[a - 1], ids[b - 1], "updates", sim) for (a, _, sim), b in zip(twins, pairs[1::2], strict=True)]
        edges += [
            (ids[rng.randrange(size)], ids[rng.randrange(size)], "related_to", round(rng.uniform(0.75, 0.9), 4))
            for _ in range(RELATED_EDGES)
        ]
        await db.executemany(
            "INSERT OR IGNORE INTO associations (src_id, dst_id, type, weight, created_ms) VALUES (?, ?, ?, ?, 0)",
            edges,
        )
        # Twins are used a lot: they are the merge candidates (importance >= promote).
        await db.executemany(
            "UPDATE crystals SET access_count = 20, last_access_ms = ?, lifecycle = 'activated' WHERE rowid = ?",
            [(now, rowid) for rowid in pairs],
        )
    await store.checkpoint()


async def _plain_read_s(store: IntakeStore) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        async with store.reader().execute("SELECT * FROM crystals") as cursor:
            rows = await cursor.fetchall()
        best = min(best, time.perf_counter() - started)
        assert rows
    return best


async def _measure(size: int, tmp: Path) -> dict[str, Any]:
    store = await IntakeStore.open(tmp / "consolidation.db", SyntheticEmbedder())
    try:
        await _fill(store, size, random.Random(size))
        plain = await _plain_read_s(store)
        first = await consolidate(store, levels=Hormones(dopamine=0.15, cortisol=0.02, oxytocin=0.10))
        plain_again = await _plain_read_s(store)
        second = await consolidate(store, levels=Hormones(dopamine=0.15, cortisol=0.02, oxytocin=0.10))
    finally:
        await store.close()
    first_s, second_s = first.duration_ms / 1000, second.duration_ms / 1000
    return {
        "crystals": size,
        "baseline_plain_read_s": round(plain, 3),
        "first_cycle_s": round(first_s, 3),
        "first_cycle_ratio_to_read": round(first_s / plain, 2),
        "first_cycle": {
            k: getattr(first, k) for k in ("rescored", "expired_by_ttl", "expired_by_decay", "promoted", "merged")
        },
        "baseline_plain_read_after_s": round(plain_again, 3),
        "steady_cycle_s": round(second_s, 3),
        "steady_cycle_ratio_to_read": round(second_s / plain_again, 2),
        "goal_cycle_s": GOAL_S,
        "goal_ratio": GOAL_RATIO,
        "goal_met": max(first_s, second_s) < GOAL_S and max(first_s / plain, second_s / plain_again) <= GOAL_RATIO,
    }


def run(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(_measure(QUICK_SIZE if quick else SIZE, Path(tmp)))
