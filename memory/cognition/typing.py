"""Automatic typing: which of the nine semantic types a statement is, offline and deterministic.

A multinomial logistic regression over the statement's words, word pairs, first words and the
cues of ``memory.cognition.cues``, fitted on the labelled statements shipped with the package
(``data/typing_examples.jsonl``) plus the person's own corrections (``memory retype``). Fitting
takes a fraction of a second and is done once per set of examples; classifying a statement is
a few dictionary lookups (about 30 µs), so typing every crystal of a bulk import stays cheap.

The model is pure: it reads no database. ``memory.cognition.typer`` keeps the corrections and
decides when to refit.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np

from memory.cognition.cues import cues
from memory.cognition.procedure import reads_as_procedure
from memory.errors import InvalidValue
from memory.model import KNOWLEDGE_TYPES, SemanticType

#: Only the start of a long text is read: what a statement is shows in its first lines, and the
#: cost of typing must not grow with the text.
READ_CHARS = 1_000
#: Words weighed one by one, and the first words whose neighbouring pairs are weighed too: the kind
#: of a statement shows early (measured on the dev set: the same accuracy as reading every word).
READ_TOKENS = 24
PAIRED_TOKENS = 10
CLASSES: tuple[SemanticType, ...] = tuple(SemanticType)
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[?!`$/|=:]")
_CAPITALISED_INSIDE = re.compile(r"(?<=[a-z,;] )[A-Z][a-z]{2,}")
_FIRST_PERSON = frozenset(("i", "i'm", "i've", "i'd", "me", "my", "we", "we're", "our", "us"))
#: A statement that starts with a verb in the third person has no subject: "wants to…", "prefers…".
_SUBJECTLESS_START = re.compile(r"^[a-z]+s\b")


def _stem(token: str) -> str:
    """A crude stem, enough to let "prefers"/"preferred" and "plans"/"planning" share a weight."""
    stem = token
    for suffix in ("ing", "ed", "es", "s"):
        if len(token) > len(suffix) + 3 and token.endswith(suffix) and not token.endswith("ss"):
            stem = token[: -len(suffix)]
            break
    if len(_STEMS) < _MAX_STEMS:
        _STEMS[token] = stem
    return stem


stem = _stem  # the typer's stemmer, for others that match words the way it does (curiosity gaps)

#: Stems already worked out (a bounded memo: a flood of made-up words cannot grow it without end).
_STEMS: dict[str, str] = {}
_MAX_STEMS = 100_000


@dataclass(frozen=True, slots=True)
class _Parts:
    """A statement's features by kind: word stems, neighbouring pairs ("a_b"), its first stem and
    first pair, and the named ones (cues and the length bucket)."""

    stems: list[str]
    pairs: list[str]
    first: str | None
    first_pair: str | None
    named: list[str]


def _parts(text: str) -> _Parts:
    head = text[:READ_CHARS].strip()
    every_token = _TOKEN.findall(head.lower())
    tokens = every_token[:READ_TOKENS]
    stems = [_STEMS.get(t) or _stem(t) for t in tokens]
    named = ["c:" + name for name in cues(tokens, head)]
    if _SUBJECTLESS_START.match(head):  # lower case first: a fragment such as "wants to…"
        named.append("c:subjectless")
    if _CAPITALISED_INSIDE.search(head):
        named.append("c:name_inside")
    if not _FIRST_PERSON.isdisjoint(tokens):
        named.append("c:first_person")
    n = len(every_token)
    named.append("len:" + ("1" if n <= 1 else "2-3" if n <= 3 else "4-7" if n <= 7 else "8-15" if n <= 15 else "16+"))
    return _Parts(
        stems=stems,
        pairs=[f"{a}_{b}" for a, b in itertools.pairwise(stems[:PAIRED_TOKENS])],
        first=stems[0] if stems else None,
        first_pair="_".join(stems[:2]) if stems else None,
        named=named,
    )


def features(text: str) -> list[str]:
    """The features of a statement, as names (each counted once): what the model is fitted on."""
    parts = _parts(text)
    out = {"w:" + s for s in parts.stems}
    out.update("b:" + p for p in parts.pairs)
    if parts.first is not None:
        out.add("f:" + parts.first)
        out.add(f"f2:{parts.first_pair}")
    out.update(parts.named)
    return list(out)


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    semantic_type: SemanticType
    weight: float = 1.0  # a person's correction counts more than a shipped example


@dataclass(frozen=True, slots=True)
class Guess:
    semantic_type: SemanticType
    confidence: float  # the model's probability of that type, in (0, 1]


class TypingModel:
    """Weights per feature and class; ``fit`` builds one, ``classify`` uses it."""

    def __init__(self, vocabulary: dict[str, int], weights: np.ndarray, bias: np.ndarray) -> None:
        self._vocabulary = vocabulary
        self._weights = weights
        self._bias = bias
        # The vocabulary split by kind, so a statement is looked up by its stems and pairs as they
        # are, without building a feature name for each (that was half the cost of typing).
        by_kind: dict[str, dict[str, int]] = {"w": {}, "b": {}, "f": {}, "f2": {}}
        for name, index in vocabulary.items():
            kind, _, value = name.partition(":")
            if kind in by_kind:
                by_kind[kind][value] = index
        self._words, self._pairs, self._firsts, self._first_pairs = (by_kind[k] for k in ("w", "b", "f", "f2"))

    def arrays(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The feature names in row order, the weights and the bias: the model, to keep and rebuild."""
        names = sorted(self._vocabulary, key=self._vocabulary.__getitem__)
        return names, self._weights, self._bias

    def _indices(self, text: str) -> list[int]:
        """The rows of ``features(text)`` that the model knows, each once."""
        parts = _parts(text)
        words, pairs, named = self._words, self._pairs, self._vocabulary
        found = {words[s] for s in parts.stems if s in words}
        found.update(pairs[p] for p in parts.pairs if p in pairs)
        found.update(named[n] for n in parts.named if n in named)
        if parts.first is not None:
            for table, key in ((self._firsts, parts.first), (self._first_pairs, parts.first_pair)):
                if key in table:
                    found.add(table[key])
        return list(found)

    @classmethod
    def fit(cls, examples: Sequence[Example], *, l2: float = 1e-3, steps: int = 100) -> TypingModel:
        """Full-batch gradient descent with momentum on the mean weighted log loss (deterministic)."""
        rows = [features(e.text) for e in examples]
        vocabulary: dict[str, int] = {}
        for names in rows:
            for name in names:
                vocabulary.setdefault(name, len(vocabulary))
        # The design matrix is sparse (a few dozen features of thousands per row): kept as the
        # (row, feature) pairs of its ones, so a step costs the pairs, not rows x features.
        pair_rows = np.array([i for i, names in enumerate(rows) for _ in names], dtype=np.intp)
        pair_features = np.array([vocabulary[n] for names in rows for n in names], dtype=np.intp)
        row_starts = np.searchsorted(pair_rows, np.arange(len(examples)))  # every row has a length feature
        by_feature = np.argsort(pair_features, kind="stable")
        feature_starts = np.searchsorted(pair_features[by_feature], np.arange(len(vocabulary)))
        rows_by_feature = pair_rows[by_feature]
        y = np.zeros((len(examples), len(CLASSES)))
        y[np.arange(len(examples)), [CLASSES.index(e.semantic_type) for e in examples]] = 1.0
        sample = np.array([e.weight for e in examples])[:, None]
        sample /= sample.sum()
        w = np.zeros((len(vocabulary), len(CLASSES)))
        b = np.zeros(len(CLASSES))
        velocity_w, velocity_b = np.zeros_like(w), np.zeros_like(b)
        rate, momentum = 2.0, 0.9
        for _ in range(steps):
            logits = np.add.reduceat(w[pair_features], row_starts) + b
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            error = (p - y) * sample
            gradient = l2 * w + np.add.reduceat(error[rows_by_feature], feature_starts)
            velocity_w = momentum * velocity_w - rate * gradient
            velocity_b = momentum * velocity_b - rate * error.sum(axis=0)
            w += velocity_w
            b += velocity_b
        return cls(vocabulary, w, b)

    def classify_many(self, texts: Sequence[str], chat: Sequence[bool] | None = None) -> list[Guess]:
        """``classify`` for a batch, with one numpy pass over all of it (a bulk import's way)."""
        if not texts:
            return []
        known = [self._indices(t) for t in texts]
        # A row with no known feature still gets its bias: point it at an extra zero row.
        zero = len(self._weights)
        flat = np.array([i for row in known for i in (row or [zero])], dtype=np.intp)
        starts = np.cumsum([0] + [max(1, len(row)) for row in known[:-1]])
        padded = np.vstack([self._weights, np.zeros((1, len(CLASSES)))])
        scores = gate_procedures(np.add.reduceat(padded[flat], starts) + self._bias, texts, chat)
        tops = scores.argmax(axis=1)
        confidence = 1.0 / np.exp(scores - scores[np.arange(len(texts)), tops][:, None]).sum(axis=1)
        return [Guess(CLASSES[int(t)], float(c)) for t, c in zip(tops, confidence, strict=True)]

    def log_probs_many(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's log-probability of each class (rows: texts, columns: ``CLASSES``)."""
        scores = np.array([self._weights[self._indices(t)].sum(axis=0) + self._bias for t in texts])
        scores = scores.reshape(len(texts), len(CLASSES))
        scores -= scores.max(axis=1, keepdims=True)
        return np.asarray(scores - np.log(np.exp(scores).sum(axis=1, keepdims=True)))

    def classify(self, text: str, *, chat: bool = False) -> Guess:
        """The likeliest type of ``text``; ``chat``: a transcript's turn (``gate_procedures``)."""
        scores = self._weights[self._indices(text)].sum(axis=0) + self._bias
        scores = gate_procedures(scores[None, :], [text], [chat])[0]
        top = int(scores.argmax())
        return Guess(CLASSES[top], float(1.0 / np.exp(scores - scores[top]).sum()))


#: The columns of the types that hold a procedure (``memory.cognition.procedure``).
_PROCEDURE_COLUMNS = [CLASSES.index(t) for t in KNOWLEDGE_TYPES]


def gate_procedures(scores: np.ndarray, texts: Sequence[str], chat: Sequence[bool] | None) -> np.ndarray:
    """``scores`` (rows: texts, columns: ``CLASSES``) with skill and task pattern ruled out for each
    turn of a transcript (``chat``) whose best type is one of them but whose words do not read as a
    procedure: a chat line is typed by the next best type, never a skill for its topic alone (issue
    52: 4 of 85 pieces of a chat written apart). Notes are left to the model: on statements and
    procedures written apart (``bench/data/procedures_apart.jsonl``), gating them too cost 9 of 80
    procedures their type to spare 2 of 80 statements."""
    out = np.array(scores, dtype=float, copy=True)
    if not chat or not any(chat):
        return out
    for row in np.flatnonzero(np.isin(out.argmax(axis=1), _PROCEDURE_COLUMNS)):
        if chat[int(row)] and not reads_as_procedure(texts[int(row)]):
            out[row, _PROCEDURE_COLUMNS] = -np.inf
    return out


def read_examples(lines: Iterable[str]) -> list[Example]:
    """Labelled statements from JSON lines ``{"text": ..., "type": ...}``; ``ValueError`` names a bad line."""
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            out.append(Example(str(doc["text"]), SemanticType(doc["type"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidValue(f"line {number}: {exc}") from None
    return out


#: The labelled statements shipped with the package (see ``data/README.md``): the first set, and the
#: same nine types in five more voices (chat, an agent's notes, conversation turns, work documents, a
#: diary), each statement with its voice.
EXAMPLE_FILES = ("typing_examples.jsonl", "typing_voices.jsonl")


def _data(name: str) -> str:
    return resources.files("memory.cognition").joinpath(f"data/{name}").read_text("utf-8")


def voiced_examples() -> list[tuple[str, Example]]:
    """The shipped statements of ``typing_voices.jsonl``, each with its voice."""
    out = []
    for line in _data("typing_voices.jsonl").splitlines():
        if line.strip():
            doc = json.loads(line)
            out.append((str(doc["voice"]), Example(str(doc["text"]), SemanticType(doc["type"]))))
    return out


def shipped_examples() -> list[Example]:
    """Every labelled statement shipped with the package."""
    return read_examples(_data(EXAMPLE_FILES[0]).splitlines()) + [e for _, e in voiced_examples()]
