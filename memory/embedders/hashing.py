"""A zero-dependency fallback embedder: signed feature hashing of words, word pairs and
character trigrams. Deterministic across processes (CRC32, not Python's salted
``hash``), instant, and useful for tests; it captures lexical overlap, not meaning.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections.abc import Sequence

import numpy as np

from memory.embedders.base import Vectors, normalise_rows
from memory.errors import InvalidValue

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


class HashingEmbedder:
    carries_meaning = False

    def __init__(self, dim: int = 384) -> None:
        if dim < 16:
            raise InvalidValue("dim must be at least 16")
        self._dim = dim

    @property
    def id(self) -> str:
        return f"hashing-v1-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = [w.lower() for w in _WORD.findall(text)]
        feats: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        feats += [(f"b:{a} {b}", 0.7) for a, b in itertools.pairwise(words)]
        for w in words:
            padded = f"<{w}>"
            feats += [(f"t:{padded[i : i + 3]}", 0.3) for i in range(len(padded) - 2)]
        return feats

    def _vector(self, text: str) -> list[float]:
        vec = [0.0] * self._dim
        counts: dict[str, float] = {}
        for feat, weight in self._features(text):
            counts[feat] = counts.get(feat, 0.0) + weight
        for feat, weight in counts.items():
            h = zlib.crc32(feat.encode("utf-8"))
            sign = 1.0 if h & 0x80000000 else -1.0
            vec[h % self._dim] += sign * (1.0 + math.log(weight)) if weight >= 1 else sign * weight
        return vec

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        return normalise_rows(np.array([self._vector(t) for t in texts], dtype=np.float32))

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self.embed_documents([text])[0]
        return row
