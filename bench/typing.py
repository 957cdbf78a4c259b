"""Automatic typing: accuracy, macro-F1 and the confusion matrix on a labelled set, and its cost.

Two typers: the word model alone (how a crystal is typed when stored) and words with meaning (how it
is typed again once embedded: ``memory.cognition.vector_typing`` over MiniLM vectors). Beside the set,
by voice: the shipped examples hold the nine types in five voices (``typing_voices.jsonl``); each voice
is typed by models fitted without it (the first shipped set and the four other voices), so the figure
is one for a voice no example was written in.

The set is ``bench/data/typing_dev.jsonl`` (220 statements written for measuring, never fitted
on: the typer fits ``memory/cognition/data/typing_examples.jsonl``), or any JSON-lines file of
``{"text": ..., "type": ...}`` named by ``TYPING_SET_PATH``. Baselines in the same run: always
answering ``general`` (what every untyped memory got before automatic typing) and always answering
the set's most common type. The reverse fit (the model fitted on the dev set, scored on the shipped
examples) shows how far the figure depends on which set was written first.
Goal (issue 16): accuracy >= 0.85 on a held-out set of the same kind.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ground.authority import Speaker
from memory.cognition.model_cache import shipped_model
from memory.cognition.procedure import reads_as_procedure
from memory.cognition.typing import (
    CLASSES,
    EXAMPLE_FILES,
    Example,
    TypingModel,
    read_examples,
    shipped_examples,
    voiced_examples,
)
from memory.cognition.vector_typing import VectorTypingModel, mixed
from memory.embedders import make_embedder
from memory.embedders.base import Embedder
from memory.epistemic import layer_for
from memory.model import KNOWLEDGE_TYPES, Origin, SemanticType

DEV_SET = Path(__file__).parent / "data" / "typing_dev.jsonl"
#: Statements and procedures, notes and chat lines, written apart from ``memory.cognition.procedure``.
PROCEDURES_SET = Path(__file__).parent / "data" / "procedures_apart.jsonl"
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


def layer_agreement(truth: Sequence[Example], guessed: Sequence[SemanticType]) -> float:
    """The share whose epistemic layer, from the guessed type, is the one the true type gives."""
    same = sum(
        layer_for(e.text, e.semantic_type, Origin.USER_INPUT, Speaker.PERSON)
        is layer_for(e.text, g, Origin.USER_INPUT, Speaker.PERSON)
        for e, g in zip(truth, guessed, strict=True)
    )
    return round(same / len(truth), 3)


def with_meaning(
    train: Sequence[Example], test: Sequence[Example], embedder: Embedder
) -> tuple[list[SemanticType], list[SemanticType]]:
    """The word model's guesses and the words-with-meaning guesses, both fitted on ``train``."""
    words = TypingModel.fit(train)
    vectors = VectorTypingModel.fit(embedder.embed_documents([e.text for e in train]), train)
    texts = [e.text for e in test]
    word_lp = words.log_probs_many(texts)
    both = mixed(word_lp, vectors.log_probs(embedder.embed_documents(texts)))
    return [CLASSES[int(i)] for i in word_lp.argmax(axis=1)], [g.semantic_type for g in both]


def by_voice(embedder: Embedder) -> dict[str, Any]:
    """Each shipped voice typed by models fitted without it."""
    first = read_examples(
        (Path(__file__).resolve().parents[1] / "memory" / "cognition" / "data" / EXAMPLE_FILES[0])
        .read_text(encoding="utf-8")
        .splitlines()
    )
    voiced = voiced_examples()
    out: dict[str, Any] = {}
    for voice in sorted({v for v, _ in voiced}):
        test = [e for v, e in voiced if v == voice]
        train = first + [e for v, e in voiced if v != voice]
        words, both = with_meaning(train, test, embedder)
        truth = [e.semantic_type for e in test]
        out[voice] = {
            "statements": len(test),
            "words": scores(truth, words)["accuracy"],
            "words_and_meaning": scores(truth, both)["accuracy"],
            "first_set_alone_words": quality(TypingModel.fit(first), test)["accuracy"],
        }
    voices = list(out.values())
    keys = ("words", "words_and_meaning", "first_set_alone_words")
    out["mean"] = {key: round(sum(v[key] for v in voices) / len(voices), 3) for key in keys}
    return out


def chat_lines(model: TypingModel) -> dict[str, Any]:
    """Issue 52: statements and procedures written apart (``PROCEDURES_SET``, never tuned on): how
    often words read as a procedure (``memory.cognition.procedure``), and how often the word model
    types each kind a skill or task pattern, as a note and as a transcript's turn (``chat``, gated)."""
    rows = [json.loads(line) for line in PROCEDURES_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    kinds = sorted({r["kind"] for r in rows})
    out: dict[str, Any] = {"set": str(PROCEDURES_SET), "lines": len(rows)}
    readings: dict[str, Callable[[str], bool]] = {
        "read_as_procedure": reads_as_procedure,
        "typed_skill_or_task_as_note": lambda t: model.classify(t).semantic_type in KNOWLEDGE_TYPES,
        "typed_skill_or_task_as_chat": lambda t: model.classify(t, chat=True).semantic_type in KNOWLEDGE_TYPES,
    }
    for name, reading in readings.items():
        out[name] = {k: f"{sum(reading(r['text']) for r in rows if r['kind'] == k)}/"
                        f"{sum(r['kind'] == k for r in rows)}" for k in kinds}  # fmt: skip
    return out


def run(quick: bool) -> dict[str, Any]:
    path = Path(os.environ.get("TYPING_SET_PATH") or DEV_SET)
    examples = read_examples(path.read_text(encoding="utf-8").splitlines())
    truth = [e.semantic_type for e in examples]
    started = time.perf_counter()
    model = shipped_model()
    fit_s = time.perf_counter() - started
    result: dict[str, Any] = {"set": str(path), "statements": len(examples), "fit_s": round(fit_s, 3)}
    result["typer"] = quality(model, examples)
    embedder = make_embedder("minilm")
    words, both = with_meaning(shipped_examples(), examples, embedder)
    result["typer_words_and_meaning"] = scores(truth, both)
    result["epistemic_layer_agreement"] = {
        "words": layer_agreement(examples, words),
        "words_and_meaning": layer_agreement(examples, both),
    }
    result["by_voice_held_out"] = by_voice(embedder)
    result["baseline_always_general"] = scores(truth, [SemanticType.GENERAL] * len(truth))
    common = Counter(truth).most_common(1)[0][0]
    result["baseline_most_common_type"] = {"type": common.value, **scores(truth, [common] * len(truth))}
    if path == DEV_SET:
        result["reverse_fit_on_dev_scored_on_shipped"] = quality(TypingModel.fit(examples), shipped_examples())
    result["chat_lines"] = chat_lines(model)
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
    result["goal_met"] = result["typer_words_and_meaning"]["accuracy"] >= GOAL_ACCURACY
    return result
