"""Secrets in free text: recall on secret phrasings and false alarms on look-alikes, on two splits.

The sets are ``bench/data/secrets_dev.jsonl`` (162 secrets, 160 look-alikes: the rules in
``memory/governance/secrets`` were tuned on it) and ``bench/data/secrets_check.jsonl`` (100 + 100, held
out: written with the development split, before any rule changed, and never tuned on). Both were written
apart from the classifier, in many voices: notes, chat, config lines, shell, five languages.

Baselines in the same run: the shapes alone (vendor keys, key blocks, cards, IBANs, URLs with a password:
close to what the classifier was before issue 27) and a cue word alone (any of "password", "pin",
"key", "token", "account" …: recall without judging the value). Cost: microseconds per statement on
ordinary text (the typing set, where almost nothing is secret).
Goal (issue 27): most reworded secrets found, with few false alarms, on the held-out split.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory.governance.rules import classify_sensitivity
from memory.governance.secrets.cues import CASED_CUES, CUES
from memory.governance.secrets.shapes import shaped_secrets
from memory.model import Sensitivity

DATA = Path(__file__).parent / "data"
SPLITS = {"development": DATA / "secrets_dev.jsonl", "held_out": DATA / "secrets_check.jsonl"}
ORDINARY = DATA / "typing_dev.jsonl"


def _classifier(text: str) -> bool:
    return classify_sensitivity(text) is Sensitivity.CONFIDENTIAL


def _shapes_alone(text: str) -> bool:
    return bool(shaped_secrets(text))


def _cue_alone(text: str) -> bool:
    return CUES.search(text.lower()) is not None or CASED_CUES.search(text) is not None


DETECTORS: dict[str, Callable[[str], bool]] = {
    "classifier": _classifier,
    "baseline_shapes_alone": _shapes_alone,
    "baseline_cue_word_alone": _cue_alone,
}


def score(rows: list[dict[str, Any]], detector: Callable[[str], bool]) -> dict[str, Any]:
    secrets = [r for r in rows if r["secret"]]
    benign = [r for r in rows if not r["secret"]]
    found = [r for r in secrets if detector(r["text"])]
    alarms = [r for r in benign if detector(r["text"])]
    missed_by_kind = Counter(r["kind"] for r in secrets if r not in found)
    return {
        "recall": round(len(found) / len(secrets), 3),
        "false_alarm_rate": round(len(alarms) / len(benign), 3),
        "found": len(found),
        "secrets": len(secrets),
        "false_alarms": len(alarms),
        "look_alikes": len(benign),
        "missed_by_kind": dict(missed_by_kind.most_common()),
    }


def _cost_us(detector: Callable[[str], bool], texts: list[str], rounds: int) -> float:
    started = time.perf_counter()
    for _ in range(rounds):
        for text in texts:
            detector(text)
    return round((time.perf_counter() - started) / (rounds * len(texts)) * 1e6, 1)


def run(quick: bool) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for split, path in SPLITS.items():
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        result[split] = {"set": str(path.relative_to(Path(__file__).parent.parent))} | {
            name: score(rows, detector) for name, detector in DETECTORS.items()
        }
    ordinary = [json.loads(line)["text"] for line in ORDINARY.read_text(encoding="utf-8").splitlines()]
    rounds = 5 if quick else 50
    result["us_per_ordinary_statement"] = {
        "classifier": _cost_us(_classifier, ordinary, rounds),
        "baseline_shapes_alone": _cost_us(_shapes_alone, ordinary, rounds),
    }
    return result
