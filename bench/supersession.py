"""Outdated facts: does search rank the current statement above the one it replaced?

Each case of ``bench/data/supersession_dev.jsonl`` (45, written for this purpose in varied domains,
corrections and implicit updates; or any file of the same shape named by ``SUPERSESSION_PATH``)
is stored in a fresh memory as a person would have said it: the old statement, three unrelated
ones about the same person or system a day apart, the new statement ten days after the old one;
then its question is searched a day later (top 10). Reported: the share of cases with the current
statement ranked above the stale one (a stale one not found at all counts as current-first when the
current one is), and the share with the stale one as the top hit, for hybrid search and BM25
alone; the share of updates detected on save, and how many crystals were superseded wrongly.
Cases of kind ``no_update`` (``bench/data/supersession_check.jsonl`` has 15) are later
statements that look like updates but are not: their old statement must still be found.
Three variants, same run: supersession on save with the search-time ordering (the node's
default), the search-time ordering alone, and neither (the baseline: the ranking before issue 17).
Goal (issue 17): current above stale in >= 95% of a held-out set, the stale one never on top.
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
from memory.supersession.detect import Supersession

CASES = Path(os.environ.get("SUPERSESSION_PATH") or Path(__file__).parent / "data" / "supersession_dev.jsonl")
DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01
GOAL_CURRENT_FIRST = 0.95


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


#: (report name, supersession on save, search orders a later hit that may update an earlier one first)
VARIANTS = (
    ("with_supersession", True, True),
    ("search_order_only", False, True),
    ("baseline_without_supersession", False, False),
)


async def _case(
    case: dict[str, Any], embedder: Embedder, folder: Path, name: str, on_save: bool, in_search: bool
) -> dict[str, Any]:
    clock = _Clock()
    hook = Supersession().hook() if on_save else auto_link
    store = await MemoryStore.open(folder / f"{name}.db", embedder, now_ms=clock, on_embedded=hook)
    try:
        said = [(0, case["old"])] + [(1 + i, d) for i, d in enumerate(case["distractors"])] + [(10, case["new"])]
        ids = {}
        for day, text in said:
            clock.now = T0 + day * DAY
            ids[text] = (await store.remember(NewCrystal(text, origin=Origin.SESSION))).crystal.id
        clock.now = T0 + 11 * DAY
        superseded = {text for text, cid in ids.items() if (await store.get(cid)).superseded is not None}
        update = case["kind"] != "no_update"
        out: dict[str, Any] = {
            "detected": update and superseded == {case["old"]},
            "wrongly_superseded": len(superseded - ({case["old"]} if update else set())),
        }
        for mode in (SearchMode.HYBRID, SearchMode.KEYWORD):
            # Nothing is superseded without supersession on save, so including superseded crystals
            # only turns the search-time ordering off: the ranking from before this issue.
            request = SearchRequest(
                case["question"], mode=mode, limit=10, touch=False, include_superseded=not in_search
            )
            hits = await search(store, request)
            texts = [h.crystal.text for h in hits]
            old = texts.index(case["old"]) if case["old"] in texts else None
            new = texts.index(case["new"]) if case["new"] in texts else None
            out[mode.value] = {
                "current_first": new is not None and (old is None or new < old),
                "stale_on_top": old == 0,
                "old_found": old is not None,
            }
        return out
    finally:
        await store.close()


def _share(flags: list[bool]) -> float:
    return round(sum(flags) / len(flags), 3) if flags else 0.0


def _summary(cases: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
    updates = [(c, r) for c, r in zip(cases, results, strict=True) if c["kind"] != "no_update"]
    keeps = [r for c, r in zip(cases, results, strict=True) if c["kind"] == "no_update"]
    out: dict[str, Any] = {
        "detected": _share([r["detected"] for _, r in updates]),
        "wrongly_superseded": sum(r["wrongly_superseded"] for r in results),
    }
    for mode in ("hybrid", "keyword"):
        by_kind: dict[str, list[bool]] = defaultdict(list)
        for case, result in updates:
            by_kind[case["kind"]].append(result[mode]["current_first"])
        out[mode] = {
            "current_first": _share([r[mode]["current_first"] for _, r in updates]),
            "stale_on_top": _share([r[mode]["stale_on_top"] for _, r in updates]),
            "current_first_by_kind": {k: _share(v) for k, v in sorted(by_kind.items())},
        }
        if keeps:  # statements that look like updates but are not: the old answer must stay found
            out[mode]["no_update_old_still_found"] = _share([r[mode]["old_found"] for r in keeps])
    return out


def run(quick: bool) -> dict[str, Any]:
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    if quick:
        cases = cases[:10]
    embedder = make_embedder("minilm")

    async def go(on_save: bool, in_search: bool) -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            return [await _case(c, embedder, Path(tmp), f"case{i}", on_save, in_search) for i, c in enumerate(cases)]

    report: dict[str, Any] = {
        "set": str(CASES),
        "cases": len(cases),
        "update_cases": sum(c["kind"] != "no_update" for c in cases),
        "embedder": embedder.id,
    }
    for name, on_save, in_search in VARIANTS:
        report[name] = _summary(cases, asyncio.run(go(on_save, in_search)))
    report["goal_current_first"] = GOAL_CURRENT_FIRST
    hybrid = report["with_supersession"]["hybrid"]
    report["goal_met"] = hybrid["current_first"] >= GOAL_CURRENT_FIRST and hybrid["stale_on_top"] == 0
    return report
