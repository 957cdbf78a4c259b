"""Emerging skills on a labelled set written after their threshold was set and never used to change
it (``bench/data/emerging_dev.jsonl``): eight procedures written three times each in different
voices (terse notes, first person, steps), and ten single procedures, several sharing a topic with
one of the eight (restoring beside backing up, rolling back beside deploying, pizza dough beside
sourdough). Reports how many of the eight emerge whole, how many patterns mix procedures, and how
many single procedures were pulled into a pattern, with MiniLM (the default embedder).

Baseline, same run: the same grouping with the hashing embedder (word overlap only).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from memory.embedders import make_embedder
from memory.emerging.patterns import Practice, emerging

DATA = Path(__file__).resolve().parents[1] / "data" / "emerging_dev.jsonl"


async def _score(embedder_name: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    embedder = make_embedder(embedder_name)
    vectors = await asyncio.to_thread(embedder.embed_documents, [r["text"] for r in rows])
    practices = []
    label = {}
    for index, (row, vector) in enumerate(zip(rows, vectors, strict=True)):
        unit = np.asarray(vector, dtype=np.float32)
        unit /= float(np.linalg.norm(unit)) or 1.0
        name = f"p{index}"
        label[name] = row.get("group") or f"single-{index}"
        practices.append(Practice(name, row["text"], unit, index))
    found = emerging(practices)
    groups = Counter(r["group"] for r in rows if "group" in r)
    whole = sum(
        1
        for s in found
        if len({label[i] for i in s.crystal_ids}) == 1 and len(s.crystal_ids) == groups.get(label[s.crystal_ids[0]], 0)
    )
    mixed = sum(1 for s in found if len({label[i] for i in s.crystal_ids}) > 1)
    pulled = sum(1 for s in found for i in s.crystal_ids if label[i].startswith("single-"))
    return {"embedder": embedder.id, "patterns": len(found), "procedures_whole": whole, "of": len(groups),
            "patterns_mixing_procedures": mixed, "single_procedures_pulled_in": pulled}  # fmt: skip


def run(quick: bool) -> dict[str, Any]:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    return {
        "minilm": asyncio.run(_score("minilm", rows)),
        "baseline": asyncio.run(_score("hashing", rows)),
        "set": {"repeated_procedures": 8, "times_each": 3, "single_procedures": 10},
    }
