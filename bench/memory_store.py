"""Memory store at 10K and 100K crystals: ingest rate and hybrid search latency, each beside raw SQLite.

Synthetic text (Zipf-distributed words) and synthetic unit vectors: timing only,
no meaning. The embedder here is ``SyntheticEmbedder``, a named fake that
returns random unit vectors instantly, so the figures measure the store and
not a model (MiniLM's own cost, ~5 ms per query, is reported by locomo_recall).

Each text holds one or two made-up names (a Zipf pool of 5,000) and each query one of them, so the
entity graph's leg has something to follow: hybrid search is timed with it and without it.

Baselines, measured in the same run on the same rows:
- ingest: a plain batched ``executemany`` INSERT of the same texts into a bare table;
- search: sqlite-vec KNN (k=50) on the store's own vector table plus an FTS5 BM25
  top-50 on its own index, run back to back, per query.
- ingest with automatic typing (the crystals come untyped) beside the same ingest typed by the caller.
Goals (issues 3 and 16) at 100K: ingest >= 5,000 crystals/s without embedding, typing on; hybrid p50 <= 30 ms.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlean
import sqlite_vec

from bench.timing import percentiles_ms
from memory.embedders.base import Vectors, normalise_rows
from memory.entities.index import index_all
from memory.fts import fts_query
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, SemanticType
from memory.retrieval.query import SearchRequest, Weights
from memory.retrieval.search import search
from memory.storage.vectors import coarse_knn_sql, vector_blob

DIM = 384
QUERIES = 200
NAMES = 5_000
GOAL_INGEST_PER_S = 5_000
GOAL_HYBRID_P50_MS = 30.0


class SyntheticEmbedder:
    """A fake embedder for timing only: deterministic random unit vectors, no model."""

    carries_meaning = False

    def __init__(self, seed: int = 7) -> None:
        self._rng = np.random.default_rng(seed)

    @property
    def id(self) -> str:
        return "synthetic-bench-384"

    @property
    def dim(self) -> int:
        return DIM

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return normalise_rows(self._rng.standard_normal((len(texts), DIM), dtype=np.float32))

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self.embed_documents([text])[0]
        return row


def synthetic_names(count: int, rng: random.Random) -> list[str]:
    """Made-up capitalised names ("Kalomire"), for the entity graph to find."""
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    names: set[str] = set()
    while len(names) < count:
        names.add("".join(rng.choices(syllables, k=rng.randint(2, 4))).capitalize())
    return sorted(names)


def synthetic_texts(count: int, rng: random.Random) -> list[str]:
    """Zipf-distributed words, and one or two names from a Zipf-distributed pool of 5,000 (a few
    people named everywhere, most rarely), mid-sentence as a person would write them."""
    vocabulary = [f"w{i}" for i in range(20_000)]
    cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocabulary))))
    names = synthetic_names(NAMES, rng)
    name_weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(names))))
    texts = []
    for i in range(count):
        words = rng.choices(vocabulary, cum_weights=cumulative, k=rng.randint(12, 40))
        for name in rng.choices(names, cum_weights=name_weights, k=rng.randint(1, 2)):
            words.insert(rng.randint(1, len(words)), name)
        texts.append(f"item {i} " + " ".join(words))
    return texts


def raw_insert_rate(path: Path, texts: list[str]) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, text TEXT NOT NULL, created INTEGER NOT NULL)")
    started = time.perf_counter()
    for lo in range(0, len(texts), 500):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO rows (text, created) VALUES (?, ?)", [(t, 0) for t in texts[lo : lo + 500]])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return len(texts) / elapsed


def raw_search_ms(db: Path, bit_table: str, queries: list[str], vectors: list[Vectors]) -> list[float]:
    conn = sqlean.connect(f"file:{db}?mode=ro", uri=True)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    samples = []
    for text, vector in zip(queries, vectors, strict=True):
        started = time.perf_counter()
        conn.execute(coarse_knn_sql(bit_table), (vector_blob(vector), 50)).fetchall()
        conn.execute(
            "SELECT rowid, bm25(crystals_fts) AS s FROM crystals_fts WHERE crystals_fts MATCH ? ORDER BY s LIMIT 50",
            (fts_query(text),),
        ).fetchall()
        samples.append(time.perf_counter() - started)
    conn.close()
    return samples


async def measure(size: int, tmp: Path) -> dict[str, Any]:
    rng = random.Random(size)
    texts = synthetic_texts(size, rng)
    baseline_ingest = raw_insert_rate(tmp / f"raw{size}.db", texts)
    embedder = SyntheticEmbedder()
    # The caller types every crystal: the store's cost without automatic typing (before issue 16).
    untyped_store = await IntakeStore.open(tmp / f"typed{size}.db", embedder)
    try:
        started = time.perf_counter()
        await untyped_store.remember_many([NewCrystal(t, semantic_type=SemanticType.GENERAL) for t in texts])
        ingest_typed_by_caller = size / (time.perf_counter() - started)
    finally:
        await untyped_store.close()
    store = await IntakeStore.open(tmp / f"store{size}.db", embedder)
    try:
        news = [NewCrystal(t) for t in texts]  # untyped: the store types each one
        started = time.perf_counter()
        await store.remember_many(news)
        ingest = size / (time.perf_counter() - started)
        started = time.perf_counter()
        await store.embed_backlog(batch_size=2000)
        vectors_per_s = size / (time.perf_counter() - started)
        started = time.perf_counter()
        await index_all(store)  # who each names: what the daemon reads after embedding
        entities_per_s = size / (time.perf_counter() - started)
        # two words of a crystal and a name it holds: the graph leg has something to follow
        queries = [_query(t, rng) for t in rng.sample(texts, QUERIES)]
        query_vectors = [embedder.embed_query(q) for q in queries]
        baseline = raw_search_ms(store.path, store.vectors.bit_table, queries, query_vectors)
        hybrid = await _timed(store, queries, touch=True)
        no_touch = await _timed(store, queries, touch=False)
        no_graph = await _timed(store, queries, touch=False, weights=Weights(graph_weight=0.0))
    finally:
        await store.close()
    hybrid_stats = percentiles_ms(hybrid)
    result: dict[str, Any] = {
        "crystals": size,
        "ingest_per_s": round(ingest),
        "ingest_per_s_typed_by_caller": round(ingest_typed_by_caller),
        "baseline_raw_sqlite_insert_per_s": round(baseline_ingest),
        "ingest_ratio_to_raw": round(ingest / baseline_ingest, 3),
        "vector_index_per_s": round(vectors_per_s),
        "entities_read_per_s": round(entities_per_s),
        "hybrid_search": hybrid_stats,
        "hybrid_search_without_access_update": percentiles_ms(no_touch),
        "hybrid_search_without_graph_leg": percentiles_ms(no_graph),
        "baseline_raw_knn_plus_fts": percentiles_ms(baseline),
    }
    if size >= 100_000:
        result["goal_ingest_per_s"] = GOAL_INGEST_PER_S
        result["goal_hybrid_p50_ms"] = GOAL_HYBRID_P50_MS
        result["goal_met"] = ingest >= GOAL_INGEST_PER_S and hybrid_stats["p50_ms"] <= GOAL_HYBRID_P50_MS
    return result


def _query(text: str, rng: random.Random) -> str:
    words = text.split()[2:]
    name = next((w for w in words if w[:1].isupper()), "")
    return " ".join([*rng.sample([w for w in words if w != name], 2), name]).strip()


async def _timed(store: IntakeStore, queries: list[str], *, touch: bool, weights: Weights | None = None) -> list[float]:
    samples = []
    for text in queries:
        started = time.perf_counter()
        await search(store, SearchRequest(text, limit=10, touch=touch, weights=weights or Weights()))
        samples.append(time.perf_counter() - started)
    return samples


def run(quick: bool) -> dict[str, Any]:
    sizes = [2_000] if quick else [10_000, 100_000]

    async def go() -> dict[str, Any]:
        with tempfile.TemporaryDirectory() as tmp:
            return {str(size): await measure(size, Path(tmp)) for size in sizes}

    return asyncio.run(go())
