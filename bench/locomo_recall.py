"""Retrieval quality on the LoCoMo development split (../shared/data/locomo-dev).

Every turn becomes one crystal (text plus image caption, the session's date as
its timestamp); each question searches only its own conversation; recall@k is
the share of its gold evidence turns in the top k, averaged over questions.
Reported per category and overall, for BM25 alone (the baseline), vectors
alone, and hybrid, all measured by this script in the same run.
Goal (issue 3): hybrid overall recall@10 >= 0.75.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.embedders import make_embedder
from memory.importer import neighbour_context
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin, SemanticType
from memory.retrieval.query import SearchMode, SearchRequest, Weights
from memory.retrieval.search import search

DATA = Path(
    os.environ.get("LOCOMO_PATH", Path(__file__).resolve().parents[2] / "shared/data/locomo-dev/locomo-dev.json")
)
CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop", 5: "adversarial"}
#: (report name, mode, fusion weights): hybrid with the defaults, and with the issue's k=60 unweighted
VARIANTS = (
    ("keyword", SearchMode.KEYWORD, Weights()),
    ("vector", SearchMode.VECTOR, Weights()),
    ("hybrid", SearchMode.HYBRID, Weights()),
    ("hybrid_rrf_k60_unweighted", SearchMode.HYBRID, Weights(rrf_k=60, vector_weight=1.0)),
)
GOAL_RECALL_AT_10 = 0.75
#: Conversations written for issue 52 apart from the code, in LoCoMo's format: a split to tune on and
#: one never tuned on (docs/design/conversation.md). Reported by split and category beside LoCoMo's.
APART = {
    "apart_dev": Path(__file__).resolve().parent / "data" / "conversations_apart_dev.json",
    "apart_check": Path(__file__).resolve().parent / "data" / "conversations_apart_check.json",
}
#: Two of the five development conversations held apart from any tuning (issue 28): every figure is
#: reported on the three tuned on and on these two, never on one set alone.
HELD_APART = frozenset({"conv-30", "conv-41"})


def session_time_ms(text: str) -> int:
    """'1:56 pm on 8 May, 2023' -> epoch ms (UTC)."""
    moment = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def normalise_evidence(raw: str) -> list[str]:
    """The README's rules: split on ';', drop stray ':' after 'D', drop leading zeros."""
    out = []
    for part in raw.split(";"):
        match = re.match(r"\s*D:?(\d+):0*(\d+)\s*$", part)
        if match:
            out.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return out


def turns_of(conversation: dict[str, Any], *, with_context: bool = True) -> list[tuple[str, NewCrystal]]:
    """Every turn as a crystal; with ``with_context`` each carries its neighbouring turns as context,
    as the JSONL importer gives them (``memory.importer.neighbour_context``)."""
    raw: list[tuple[str, str, str, int]] = []  # dia_id, crystal text, plain turn, session time
    for key, value in conversation.items():
        if not re.fullmatch(r"session_(\d+)", key) or not isinstance(value, list):
            continue
        when = session_time_ms(conversation[f"{key}_date_time"])
        for turn in value:
            plain = f"{turn['speaker']}: {turn['text']}"
            text = plain + (f" [shared an image: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
            raw.append((turn["dia_id"], text, plain, when))
    turns = []
    for i, (dia_id, text, _, when) in enumerate(raw):
        context = None
        if with_context:
            context = neighbour_context(raw[i - 1][2] if i > 0 else None, raw[i + 1][2] if i + 1 < len(raw) else None)
        crystal = NewCrystal(
            text,
            semantic_type=SemanticType.EPISODE,
            origin=Origin.SESSION,
            created_at_ms=when,
            source="locomo",
            context=context,
        )
        turns.append((dia_id, crystal))
    return turns


async def evaluate(embedder_name: str, quick: bool) -> dict[str, Any]:
    samples = json.loads(await asyncio.to_thread(DATA.read_text))
    if quick:
        samples = samples[:1]
    splits = [("held_apart" if s.get("sample_id") in HELD_APART else "tuned_on", s) for s in samples]
    for split, path in APART.items():
        apart = json.loads(await asyncio.to_thread(path.read_text))
        splits += [(split, s) for s in apart[: 1 if quick else None]]
    embedder = make_embedder(embedder_name)
    # recall[mode][k][category] -> list of per-question recalls
    recall: dict[str, dict[int, dict[str, list[float]]]] = {
        name: {5: defaultdict(list), 10: defaultdict(list)} for name, _, _ in VARIANTS
    }
    latencies: dict[str, list[float]] = defaultdict(list)
    by_split: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name, _, _ in VARIANTS}
    # by_split_category[mode][split][category]: every split, the sets written apart included
    by_split_category: dict[str, dict[str, dict[str, list[float]]]] = {
        name: defaultdict(lambda: defaultdict(list)) for name, _, _ in VARIANTS
    }
    turns_total = 0
    embed_s = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for index, (split, sample) in enumerate(splits):
            store = await IntakeStore.open(Path(tmp) / f"conv{index}.db", embedder)
            try:
                turns = turns_of(sample["conversation"])
                turns_total += len(turns)
                result = await store.remember_many([t for _, t in turns])
                crystal_of = {dia: cid for (dia, _), cid in zip(turns, result.ids, strict=True)}
                started = time.perf_counter()
                await store.embed_backlog(batch_size=128)
                embed_s += time.perf_counter() - started
                for qa in sample["qa"]:
                    gold = {crystal_of[d] for raw in qa["evidence"] for d in normalise_evidence(raw) if d in crystal_of}
                    if not gold:
                        continue
                    category = CATEGORIES[int(qa["category"])]
                    for name, mode, weights in VARIANTS:
                        request = SearchRequest(qa["question"], mode=mode, limit=10, touch=False, weights=weights)
                        started = time.perf_counter()
                        hits = await search(store, request)
                        latencies[name].append(time.perf_counter() - started)
                        ids = [h.crystal.id for h in hits]
                        found = len(gold & set(ids[:10])) / len(gold)
                        by_split_category[name][split][category].append(found)
                        if split in APART:  # the LoCoMo figures keep their meaning: LoCoMo alone
                            continue
                        for k in (5, 10):
                            recall[name][k][category].append(len(gold & set(ids[:k])) / len(gold))
                        by_split[name][split].append(found)
            finally:
                await store.close()
    report: dict[str, Any] = {
        "embedder": embedder.id,
        "conversations": len(samples),
        "apart_conversations": len(splits) - len(samples),
        "turns": turns_total,
        "embed_turns_per_s": round(turns_total / embed_s, 1) if embed_s else None,
    }
    for mode_name, by_k in recall.items():
        entry: dict[str, Any] = {}
        for k, by_cat in by_k.items():
            everything = [r for rs in by_cat.values() for r in rs]
            no_adv = [r for c, rs in by_cat.items() if c != "adversarial" for r in rs]
            entry[f"recall@{k}"] = {
                "overall": round(sum(everything) / len(everything), 4),
                "overall_without_adversarial": round(sum(no_adv) / len(no_adv), 4),
                **{c: round(sum(rs) / len(rs), 4) for c, rs in sorted(by_cat.items())},
            }
        ordered = sorted(latencies[mode_name])
        entry["recall@10_by_split"] = {
            split: round(sum(rs) / len(rs), 4) for split, rs in sorted(by_split[mode_name].items())
        } | {"held_apart_conversations": sorted(HELD_APART)}
        entry["recall@10_by_split_and_category"] = {
            split: {c: round(sum(rs) / len(rs), 4) for c, rs in sorted(cats.items())}
            | {"all": round(sum(r for rs in cats.values() for r in rs) / sum(len(rs) for rs in cats.values()), 4)}
            for split, cats in sorted(by_split_category[mode_name].items())
        }
        entry["questions"] = len(ordered)
        entry["search_p50_ms"] = round(ordered[len(ordered) // 2] * 1000, 2)
        report[mode_name] = entry
    hybrid = report["hybrid"]["recall@10"]["overall"]
    report["baseline"] = "keyword (BM25 alone, this script, same run)"
    report["goal_recall_at_10"] = GOAL_RECALL_AT_10
    report["goal_met"] = hybrid >= GOAL_RECALL_AT_10
    return report


def run(quick: bool) -> dict[str, Any]:
    if not DATA.exists():  # the set is not ours to ship (CC BY-NC): it sits beside the checkout
        return {"skipped": f"no LoCoMo data at {DATA} (set LOCOMO_PATH)"}
    name = os.environ.get("LOCOMO_EMBEDDER", "minilm")
    return asyncio.run(evaluate(name, quick))
