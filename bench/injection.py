"""The instruction detector (``memory.governance.injection``) on its corpus: false positives and negatives,
for the part it was written against (dev) and a part written after it and not tuned on (holdout).
The baseline is flagging nothing (what main did: every peer text went to the prompt unmarked)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory.governance.injection import instruction_flags

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "memory" / "data" / "instruction_corpus.jsonl"


def run(quick: bool) -> dict[str, Any]:
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    out: dict[str, Any] = {}
    for split in sorted({r["split"] for r in rows}):
        part = [r for r in rows if r["split"] == split]
        attacks = [r["text"] for r in part if r["attack"]]
        benign = [r["text"] for r in part if not r["attack"]]
        missed = [t for t in attacks if not instruction_flags(t)]
        false_alarms = [t for t in benign if instruction_flags(t)]
        out[split] = {
            "attacks": len(attacks),
            "benign": len(benign),
            "false_negatives": len(missed),
            "false_positives": len(false_alarms),
            "recall": round(1 - len(missed) / len(attacks), 3),
            "false_positive_rate": round(len(false_alarms) / len(benign), 3),
            "baseline_recall": 0.0,
            "missed": missed,
            "false_alarms": false_alarms,
        }
    return out
