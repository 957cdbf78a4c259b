"""Automatic typing: accuracy, macro-F1 and the confusion matrix on a labelled set, and its cost.

The set is ``bench/data/typing_dev.jsonl`` (220 statements written for measuring, never fitted
on: the typer fits ``memory/cognition/data/typing_examples.jsonl``), or any JSON-lines file of
``{"text": ..., "type": ...}`` named by ``TYPING_SET_PATH``. Baselines in the same run: always
answering ``general`` (what every untyped memory got before automatic typing) and always answering
the set's most common type. The reverse fit (the model fitted on the dev set, scored on the shipped
examples) shows how far the figure depends on which set was written first.
Goal (issue 16): accuracy >= 0.85 on a held-out set of the same kind.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memory.cognition.typing import CLASSES, Example, TypingModel, read_examples, shipped_examples, shipped_model
from memory.model import SemanticType

DEV_SET = Path(__file__).parent / "data" / "typing_dev.jsonl"
GOAL_ACCURACY = 0.85


def scores(truth: Sequence[SemanticType], guessed: Sequence[SemanticType]) -> dict[str, Any]:
    """Accuracy, macro-F1 over the nine types, per-type F1 and the confusion matrix (truth -> guesses)."""
    pairs = Counter(zip(truth, guessed, strict=True))
    per_type = {}
    for kind in CLASSES:
        hit = pairs[(kind, kind)]
        said = sum(n for (_, g), n in pairs.items() if g is kind)
        real = sum(n for (t, _), n in pairs.items() if t is kind)
        precision = hit / said if said else 0.0
        recall = hit / real if real else 0.0
        per_type[kind.value] = round(2 * precision * recall / (precision + recall), 3) if hit else 0.0
    return {
        "accuracy": round(sum(pairs[(k, k)] for k in CLASSES) / len(truth), 3),
        "macro_f1": round(sum(per_type.values()) / len(CLASSES), 3),
        "f1_by_type": per_type,
        "confusion": {
            t.value: {g.value: pairs[(t, g)] for g in CLASSES if pairs[(t, g)]} for t in CLASSES if t in set(truth)
        },
    }


def quality(model: TypingModel, examples: Sequence[Example]) -> dict[str, Any]:
    return scores(
        [e.semantic_type for e in examples], [g.semantic_type for g in model.classify_many([e.text for e in examples])]
    )


def run(quick: bool) -> dict[str, Any]:
    path = Path(os.environ.get("TYPING_SET_PATH") or DEV_SET)
    examples = read_examples(path.read_text(encoding="utf-8").splitlines())
    truth = [e.semantic_type for e in examples]
    started = time.perf_counter()
    model = shipped_model()
    fit_s = time.perf_counter() - started
    result: dict[str, Any] = {"set": str(path), "statements": len(examples), "fit_s": round(fit_s, 3)}
    result["typer"] = quality(model, examples)
    result["baseline_always_general"] = scores(truth, [SemanticType.GENERAL] * len(truth))
    common = Counter(truth).most_common(1)[0][0]
    result["baseline_most_common_type"] = {"type": common.value, **scores(truth, [common] * len(truth))}
    if path == DEV_SET:
        result["reverse_fit_on_dev_scored_on_shipped"] = quality(TypingModel.fit(examples), shipped_examples())
    texts = [e.text for e in examples] * (5 if quick else 50)
    started = time.perf_counter()
    for text in texts:
        model.classify(text)
    one_us = (time.perf_counter() - started) / len(texts) * 1e6
    started = time.perf_counter()
    model.classify_many(texts)
    batch_us = (time.perf_counter() - started) / len(texts) * 1e6
    result["us_per_statement"] = {"one_at_a_time": round(one_us, 1), "in_a_batch": round(batch_us, 1)}
    result["goal_accuracy"] = GOAL_ACCURACY
    result["goal_met"] = result["typer"]["accuracy"] >= GOAL_ACCURACY
    return result
