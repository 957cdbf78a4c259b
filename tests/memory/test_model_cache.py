"""The fitted typing models and the examples' vectors kept between processes (memory.cognition.model_cache)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory.cognition.model_cache import fitted_once, load, meaning_model, model_key, shipped_vectors
from memory.cognition.typing import Example, TypingModel, shipped_examples
from memory.cognition.vector_typing import VectorTypingModel
from memory.embedders.hashing import HashingEmbedder
from memory.model import SemanticType

EXAMPLES = [
    Example("I prefer tea to coffee in the morning", SemanticType.PREFERENCE),
    Example("My sister Ana lives in Lisbon", SemanticType.RELATIONSHIP),
    Example("Went for a run along the river today", SemanticType.EPISODE),
    Example("The office wifi password is on the whiteboard", SemanticType.FACT),
    Example("I want to learn to play the cello this year", SemanticType.GOAL),
] * 3
TEXTS = ["I would rather have green tea", "Ran 5 km by the river", "Ana is my sister", "learn the cello"]


class CountingFit:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, examples: Sequence[Example]) -> TypingModel:
        self.calls += 1
        return TypingModel.fit(examples, steps=20)


def _scores(model: TypingModel) -> np.ndarray:
    return model.log_probs_many(TEXTS)


def test_the_second_process_reads_the_fit_and_types_exactly_as_the_first(tmp_path: Path) -> None:
    fit = CountingFit()
    first = fitted_once(EXAMPLES, fit, tmp_path)
    second = fitted_once(EXAMPLES, fit, tmp_path)
    assert fit.calls == 1
    assert np.array_equal(_scores(first), _scores(second))
    assert [g.semantic_type for g in second.classify_many(TEXTS)] == [
        g.semantic_type for g in first.classify_many(TEXTS)
    ]


def test_other_examples_are_another_key_and_are_fitted_again(tmp_path: Path) -> None:
    fit = CountingFit()
    fitted_once(EXAMPLES, fit, tmp_path)
    corrected = [*EXAMPLES, Example("Ana moved to Porto", SemanticType.FACT, weight=3.0)]
    assert model_key(corrected) != model_key(EXAMPLES)
    fitted_once(corrected, fit, tmp_path)
    assert fit.calls == 2


def test_a_damaged_or_foreign_file_is_fitted_again_and_replaced(tmp_path: Path) -> None:
    fit = CountingFit()
    model = fitted_once(EXAMPLES, fit, tmp_path)
    (kept,) = tmp_path.glob("typing-*.npz")
    whole = kept.read_bytes()
    for damage in (whole[: len(whole) // 2], b"not a numpy archive", b""):
        kept.write_bytes(damage)
        assert load(kept, model_key(EXAMPLES)) is None
        again = fitted_once(EXAMPLES, fit, tmp_path)
        assert np.array_equal(_scores(again), _scores(model))
    assert fit.calls == 4
    assert load(kept, "another key") is None  # a file under another key (a prefix clash) is not used
    assert load(kept, model_key(EXAMPLES)) is not None  # the last fit replaced the damage


def test_an_unwritable_cache_folder_fits_in_each_process_as_before(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file-not-a-folder"
    blocked.write_text("")
    fit = CountingFit()
    model = fitted_once(EXAMPLES, fit, blocked)
    fitted_once(EXAMPLES, fit, blocked)
    assert fit.calls == 2
    assert model.classify("I prefer tea").semantic_type is SemanticType.PREFERENCE


class CountingEmbed:
    """An embedder's ``embed_documents`` stand-in that counts its calls: the hashing embedder's
    vectors, deterministic as MiniLM's are."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return HashingEmbedder().embed_documents(texts)


def test_the_shipped_examples_are_embedded_once_per_space_and_read_back_after(tmp_path: Path) -> None:
    embed = CountingEmbed()
    first = shipped_vectors("space-a", embed, tmp_path)
    again = shipped_vectors("space-a", embed, tmp_path)
    assert embed.calls == 1 and first.shape == (len(shipped_examples()), HashingEmbedder().dim)
    np.testing.assert_array_equal(first, again)
    shipped_vectors("space-b", embed, tmp_path)  # another embedder's vectors are another file
    assert embed.calls == 2 and len(list(tmp_path.glob("typing-vectors-*.npz"))) == 2


def test_damaged_kept_vectors_are_embedded_again(tmp_path: Path) -> None:
    embed = CountingEmbed()
    first = shipped_vectors("space-a", embed, tmp_path)
    (kept,) = tmp_path.glob("typing-vectors-*.npz")
    kept.write_bytes(kept.read_bytes()[:100])  # cut short
    np.testing.assert_array_equal(shipped_vectors("space-a", embed, tmp_path), first)
    assert embed.calls == 2
    np.testing.assert_array_equal(shipped_vectors("space-a", embed, tmp_path), first)  # and kept again
    assert embed.calls == 2


def test_the_model_of_meaning_is_fitted_once_per_set_of_examples_and_read_back_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples = shipped_examples()
    vectors = shipped_vectors("space-a", CountingEmbed(), tmp_path)
    fits: list[int] = []
    real_fit = VectorTypingModel.fit

    def counting_fit(*args: Any, **kwargs: Any) -> VectorTypingModel:
        fits.append(1)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(VectorTypingModel, "fit", counting_fit)
    first = meaning_model("space-a", vectors, examples, tmp_path)
    again = meaning_model("space-a", vectors, examples, tmp_path)
    assert len(fits) == 1
    for a, b in zip(first.arrays(), again.arrays(), strict=True):
        np.testing.assert_array_equal(a, b)
    probe = vectors[:5]
    np.testing.assert_array_equal(first.log_probs(probe), real_fit(vectors, examples).log_probs(probe))

    # A correction changes the examples: fitted again, and that fit replaces the kept one.
    corrected = [*examples, Example("Invoices go out on the 3rd", SemanticType.TASK_PATTERN, 3.0)]
    more = np.vstack([vectors, vectors[:1]])
    meaning_model("space-a", more, corrected, tmp_path)
    assert len(fits) == 2 and len(list(tmp_path.glob("typing-meaning-*.npz"))) == 1
    meaning_model("space-a", vectors, [*examples[:-1], replace(examples[-1], weight=2.0)], tmp_path)
    assert len(fits) == 3  # another weight is another fit

    # Damaged: fitted again, the same weights.
    (kept,) = tmp_path.glob("typing-meaning-*.npz")
    kept.write_bytes(kept.read_bytes()[:100])
    np.testing.assert_array_equal(meaning_model("space-a", vectors, examples, tmp_path).arrays()[0], first.arrays()[0])
    assert len(fits) == 4
