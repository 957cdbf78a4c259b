"""Typing by meaning: a logistic regression over a statement's embedding, mixed with the word model.

The word model (``memory.cognition.typing``) types a crystal when it is stored, in microseconds. Once
the crystal is embedded its vector says more about what kind of statement it is than its words do in
a voice the examples never used: measured leaving one of the five shipped voices out at a time, the
words alone typed 0.85 of the held-out voice, the vectors alone 0.86, their mix 0.925
(``python -m bench typing``). ``mixed`` averages the two models' log-probabilities.

Pure numpy: the vectors come from the caller.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory.cognition.typing import CLASSES, Example, Guess, gate_procedures

#: The vector model's share of the mix (the words have the rest): 0.5 typed the held-out voices best of
#: 0.3, 0.5 and 0.7 (0.920, 0.925, 0.908).
VECTOR_SHARE = 0.5
#: Embeddings are unit vectors; this scale lets the same plain gradient steps fit them.
_SCALE = 10.0


class VectorTypingModel:
    """Weights from an embedding to the nine classes."""

    def __init__(self, weights: np.ndarray, bias: np.ndarray) -> None:
        self._weights = weights
        self._bias = bias

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The weights and the bias, as ``__init__`` takes them (to keep them between processes)."""
        return self._weights, self._bias

    @property
    def dimensions(self) -> int:
        return int(self._weights.shape[0])

    @classmethod
    def fit(
        cls, vectors: np.ndarray, examples: Sequence[Example], *, l2: float = 1e-3, steps: int = 300
    ) -> VectorTypingModel:
        """Full-batch gradient descent with momentum on the mean weighted log loss (deterministic)."""
        x = np.asarray(vectors, dtype=np.float64) * _SCALE
        y = np.zeros((len(examples), len(CLASSES)))
        y[np.arange(len(examples)), [CLASSES.index(e.semantic_type) for e in examples]] = 1.0
        sample = np.array([e.weight for e in examples])[:, None]
        sample /= sample.sum()
        w = np.zeros((x.shape[1], len(CLASSES)))
        b = np.zeros(len(CLASSES))
        velocity_w, velocity_b = np.zeros_like(w), np.zeros_like(b)
        for _ in range(steps):
            p = _softmax(x @ w + b)
            error = (p - y) * sample
            velocity_w = 0.9 * velocity_w - 2.0 * (x.T @ error + l2 * w)
            velocity_b = 0.9 * velocity_b - 2.0 * error.sum(axis=0)
            w += velocity_w
            b += velocity_b
        return cls(w, b)

    def log_probs(self, vectors: np.ndarray) -> np.ndarray:
        scores = np.asarray(vectors, dtype=np.float64).reshape(-1, self.dimensions) * _SCALE @ self._weights
        return _log_softmax(scores + self._bias)


def mixed(
    word_log_probs: np.ndarray,
    vector_log_probs: np.ndarray,
    texts: Sequence[str] = (),
    chat: Sequence[bool] | None = None,
    share: float = VECTOR_SHARE,
) -> list[Guess]:
    """The type of each row (of ``texts``), from both models' log-probabilities, with the mix's
    probability; for a transcript's turn (``chat``), a skill or task pattern only for words that read
    as a procedure (``typing.gate_procedures``)."""
    mix = (1 - share) * np.asarray(word_log_probs) + share * np.asarray(vector_log_probs)
    combined = _log_softmax(gate_procedures(mix, texts, chat))
    tops = combined.argmax(axis=1)
    return [Guess(CLASSES[int(t)], float(np.exp(combined[i, t]))) for i, t in enumerate(tops)]


def _log_softmax(scores: np.ndarray) -> np.ndarray:
    shifted = scores - scores.max(axis=1, keepdims=True)
    return np.asarray(shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True)))


def _softmax(scores: np.ndarray) -> np.ndarray:
    return np.asarray(np.exp(_log_softmax(scores)))
