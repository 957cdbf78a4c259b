"""Outdated facts: does search rank the current statement above the one it replaced?

Each case of ``bench/data/supersession_dev.jsonl`` (45, written for this purpose in varied domains,
corrections and implicit updates; or any file of the same shape named by ``SUPERSESSION_PATH``)
is stored in a fresh memory as a person would have said it: the old statement, three unrelated
ones about the same person or system a day apart, the new statement ten days after the old one;
then its question is searched a day later (top 10). Reported: the share of cases with the current
statement ranked above the stale one (a stale one not found at all counts as current-first when the
current one is), and the share with the stale one as the top hit, for hybrid search and for BM25
alone (the baseline, same run). Goal (issue 17): current above stale in >= 95% of a held-out set,
the stale one never on top.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from memory.embedders import make_embedder
from memory.embedders.base import Embedder
from memory.graph import auto_link
from memory.model import NewCrystal, Origin
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.storage.store import MemoryStore

CASES = Path(os.environ.get("SUPERSESSION_PATH") or Path(__file__).parent / "data" / "supersession_dev.jsonl")
DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01
GOAL_CURRENT_FIRST = 0.95


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


async def _case(case: dict[str, Any], embedder: Embedder, folder: Path, index: int) -> dict[str, dict[str, Any]]:
    clock = _Clock()
    store = await MemoryStore.open(folder / f"case{index}.db", embedder, now_ms=clock, on_embedded=auto_link)
    try:
        said = [(0, case["old"])] + [(1 + i, d) for i, d in enumerate(case["distractors"])] + [(10, case["new"])]
        for day, text in said:
            clock.now = T0 + day * DAY
            await store.remember(NewCrystal(text, origin=Origin.SESSION))
        clock.now = T0 + 11 * DAY
        out = {}
        for mode in (SearchMode.HYBRID, SearchMode.KEYWORD):
            hits = await search(store, SearchRequest(case["question"], mode=mode, limit=10, touch=False))
            texts = [h.crystal.text for h in hits]
            old = texts.index(case["old"]) if case["old"] in texts else None
            new = texts.index(case["new"]) if case["new"] in texts else None
            out[mode.value] = {
                "current_first": new is not None and (old is None or new < old),
                "stale_on_top": old == 0,
            }
        return out
    finally:
        await store.close()


def run(quick: bool) -> dict[str, Any]:
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    if quick:
        cases = cases[:10]
    embedder = make_embedder("minilm")

    async def go() -> list[dict[str, dict[str, Any]]]:
        with tempfile.TemporaryDirectory() as tmp:
            return [await _case(case, embedder, Path(tmp), i) for i, case in enumerate(cases)]

    results = asyncio.run(go())
    report: dict[str, Any] = {"set": str(CASES), "cases": len(cases), "embedder": embedder.id}
    for mode in ("hybrid", "keyword"):
        by_kind: dict[str, list[bool]] = defaultdict(list)
        for case, result in zip(cases, results, strict=True):
            by_kind[case["kind"]].append(result[mode]["current_first"])
        report[mode if mode == "hybrid" else "baseline_keyword_only"] = {
            "current_first": round(sum(r[mode]["current_first"] for r in results) / len(results), 3),
            "stale_on_top": round(sum(r[mode]["stale_on_top"] for r in results) / len(results), 3),
            "current_first_by_kind": {k: round(sum(v) / len(v), 3) for k, v in sorted(by_kind.items())},
        }
    report["goal_current_first"] = GOAL_CURRENT_FIRST
    report["goal_met"] = (
        report["hybrid"]["current_first"] >= GOAL_CURRENT_FIRST and report["hybrid"]["stale_on_top"] == 0
    )
    return report
