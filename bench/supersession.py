"""Outdated facts: does search rank the current statement above the one it replaced, and does
supersession leave still-true memories alone?

**Updates.** Each case of ``bench/data/supersession_dev.jsonl`` (45, written for this purpose in
varied domains, corrections and implicit updates) and of ``supersession_check.jsonl`` (55, held out:
40 updates and 15 later statements that only look like updates) is stored in a fresh memory as a
person would have said it: the old statement, three unrelated ones about the same person or system a
day apart, the new statement ten days after the old one; then its question is searched a day later
(top 10). Reported: the share of cases with the current statement ranked above the stale one (a
stale one not found at all counts as current-first when the current one is), and the share with the
stale one as the top hit, for hybrid search and BM25 alone; the share of updates detected on save,
and how many crystals were superseded wrongly. ``SUPERSESSION_PATH`` names one other file of that
shape to run instead of all of them.

Splits, by what they have been to the judge (each written by hand, in varied voices and domains):
``development`` and ``development_2`` were tuned on; ``held_out`` and ``held_out_2`` were written
after the judge of their day and never tuned on; ``seen_3`` (``supersession_check3.jsonl``, 30
cases) was written apart and measured once on the judge before the change it then drove, so it is
tuned on now; ``seen_4`` (20 updates and 40 look-alikes) was written after that change, measured
once, then its misses drove the next change; ``held_out_5`` (20 and 40) was written after that and
never tuned on for look-alikes, while its updates' failure reasons (counted, not read) drove one
more loosening of the search-time ordering (``seen_5``); ``held_out_6`` (20 and 40) was written
before that loosening was measured and never tuned on, until its misses drove the next change
(``seen_6``); ``held_out_7`` (24 updates, 6 not) was written before that change and its updates'
misses were never read; ``seen_8`` (24 and 6) was written after it, measured once on the judge
before and after, then its misses were read and drove more of the change. The same names hold for
the look-alike files below (``seen_2`` is ``lookalikes_check2.jsonl``); look-alikes 5 to 8 are
seen: each hidden example printed drove a fix.

**Look-alikes.** ``bench/data/lookalikes_dev.jsonl`` (120 pairs) and ``lookalikes_check.jsonl`` (80,
held out: written with the first, before the judge changed, never tuned on) hold pairs that are not
updates, in eight kinds: repeated events, recurring amounts, successive versions and sessions,
additions, another entity's value, past statements, plural facts, measurement logs. Each split goes
into one memory, as a person would say it over a month (every older statement first, each newer one
thirty days later), so that every pair is also a distractor for the others. Reported per kind: the
share of older statements superseded (hidden from default search) and the share missing from the top
10 of their own question. ``LOOKALIKES_PATH`` names one other file to run instead of all of them.

**Conversation** (issue 52, ``bench.memory.conversation_updates``): the updates of
``updates_apart_*.json`` said in captured chats beside another person's look-alike: current first,
updates caught, the precision of what was hidden, and look-alikes hidden.

Variants, same run: supersession on save with the search-time ordering (the node's default), the
search-time ordering alone, and neither (the baseline: the ranking before issue 17).
Goals: issue 17: current above stale in >= 95% of a held-out set, the stale one never on top; issue
28: at most 2 % of still-true memories superseded and at most 5 % missing from their question's top 10.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.memory import conversation_updates
from memory.embedders import make_embedder
from memory.embedders.base import Embedder
from memory.graph.links import auto_link
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.supersession.detect import Supersession

DATA = Path(__file__).parent / "data"
UPDATE_SETS = (
    {"other": Path(os.environ["SUPERSESSION_PATH"])}
    if os.environ.get("SUPERSESSION_PATH")
    else {
        "development": DATA / "supersession_dev.jsonl",
        "development_2": DATA / "supersession_dev2.jsonl",
        "held_out": DATA / "supersession_check.jsonl",
        "held_out_2": DATA / "supersession_check2.jsonl",
        "seen_3": DATA / "supersession_check3.jsonl",
        "seen_4": DATA / "supersession_check4.jsonl",
        "seen_5": DATA / "supersession_check5.jsonl",
        "seen_6": DATA / "supersession_check6.jsonl",
        "held_out_7": DATA / "supersession_check7.jsonl",
        "seen_8": DATA / "supersession_check8.jsonl",
    }
)
LOOKALIKE_SETS = (
    {"other": Path(os.environ["LOOKALIKES_PATH"])}
    if os.environ.get("LOOKALIKES_PATH")
    else {
        "development": DATA / "lookalikes_dev.jsonl",
        "held_out": DATA / "lookalikes_check.jsonl",
        "seen_2": DATA / "lookalikes_check2.jsonl",
        "seen_4": DATA / "lookalikes_check4.jsonl",
        "seen_5": DATA / "lookalikes_check5.jsonl",
        "seen_6": DATA / "lookalikes_check6.jsonl",
        "seen_7": DATA / "lookalikes_check7.jsonl",
        "seen_8": DATA / "lookalikes_check8.jsonl",
    }
)
DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01
GOAL_CURRENT_FIRST = 0.95
GOAL_HIDDEN = 0.02
GOAL_MISSING = 0.05
HOUR = 3_600_000


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
    store = await IntakeStore.open(folder / f"{name}.db", embedder, now_ms=clock, on_embedded=hook)
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


async def _lookalikes(
    cases: list[dict[str, Any]], embedder: Embedder, folder: Path, on_save: bool, in_search: bool
) -> list[dict[str, Any]]:
    """All pairs in one memory: each older statement, then a month later each newer one."""
    clock = _Clock()
    hook = Supersession().hook() if on_save else auto_link
    store = await IntakeStore.open(folder / "lookalikes.db", embedder, now_ms=clock, on_embedded=hook)
    try:
        old_ids, new_ids = [], []
        for i, case in enumerate(cases):
            clock.now = T0 + i * HOUR
            old_ids.append((await store.remember(NewCrystal(case["old"], origin=Origin.USER_INPUT))).crystal.id)
        for i, case in enumerate(cases):
            clock.now = T0 + 30 * DAY + i * HOUR
            new_ids.append((await store.remember(NewCrystal(case["new"], origin=Origin.USER_INPUT))).crystal.id)
        clock.now = T0 + 40 * DAY
        out = []
        for case, old_id, new_id in zip(cases, old_ids, new_ids, strict=True):
            request = SearchRequest(case["question"], mode=SearchMode.HYBRID, limit=10, touch=False,
                                    include_superseded=not in_search)  # fmt: skip
            found = [h.crystal.id for h in await search(store, request)]
            hidden = (await store.get(old_id)).superseded is not None
            below = old_id not in found or (new_id in found and found.index(new_id) < found.index(old_id))
            by = (await store.get(old_id)).superseded
            hidden_by = (await store.get(by.by)).text if by is not None else None
            out.append({"hidden": hidden, "missing": old_id not in found, "newer_ranked_above": below,
                        "hidden_by": hidden_by})  # fmt: skip
        return out
    finally:
        await store.close()


def _lookalike_summary(cases: list[dict[str, Any]], results: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for case, result in zip(cases, results, strict=True):
        by_kind[case["kind"]].append(result)
    return {
        "hidden": _share([r["hidden"] for r in results]),
        "missing_from_top10": _share([r["missing"] for r in results]),
        # the question asks about the older statement: the newer one above it answers the wrong thing
        "newer_ranked_above": _share([r["newer_ranked_above"] for r in results]),
        "hidden_by_kind": {k: f"{sum(r['hidden'] for r in v)}/{len(v)}" for k, v in sorted(by_kind.items())},
        "missing_by_kind": {k: f"{sum(r['missing'] for r in v)}/{len(v)}" for k, v in sorted(by_kind.items())},
        "hidden_examples": [
            {"older": c["old"], "hidden_by": r["hidden_by"]} for c, r in zip(cases, results, strict=True) if r["hidden"]
        ][:10],
    }


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run(quick: bool) -> dict[str, Any]:
    embedder = make_embedder("minilm")
    report: dict[str, Any] = {"embedder": embedder.id, "updates": {}, "lookalikes": {}}
    for split, path in UPDATE_SETS.items():
        cases = _read(path)[: 10 if quick else None]
        report["updates"][split] = _updates(cases, path, embedder)
    for split, path in LOOKALIKE_SETS.items():
        cases = _read(path)[: 16 if quick else None]
        part: dict[str, Any] = {"set": str(path), "pairs": len(cases)}
        for name, on_save, in_search in VARIANTS:
            with tempfile.TemporaryDirectory() as tmp:
                results = asyncio.run(_lookalikes(cases, embedder, Path(tmp), on_save, in_search))
            part[name] = _lookalike_summary(cases, results)
        report["lookalikes"][split] = part
    # issue 52: updates said in a captured chat, beside another person's look-alike
    report["conversation"] = conversation_updates.run(embedder, quick)
    report["goals"] = {"current_first": GOAL_CURRENT_FIRST, "hidden": GOAL_HIDDEN, "missing_from_top10": GOAL_MISSING,
                       "conversation_across_voices": 0}  # fmt: skip
    return report


def _updates(cases: list[dict[str, Any]], path: Path, embedder: Embedder) -> dict[str, Any]:
    async def go(on_save: bool, in_search: bool) -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            return [await _case(c, embedder, Path(tmp), f"case{i}", on_save, in_search) for i, c in enumerate(cases)]

    report: dict[str, Any] = {
        "set": str(path),
        "cases": len(cases),
        "update_cases": sum(c["kind"] != "no_update" for c in cases),
    }
    for name, on_save, in_search in VARIANTS:
        report[name] = _summary(cases, asyncio.run(go(on_save, in_search)))
    hybrid = report["with_supersession"]["hybrid"]
    report["goal_met"] = hybrid["current_first"] >= GOAL_CURRENT_FIRST and hybrid["stale_on_top"] == 0
    return report
