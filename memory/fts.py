"""The words of a text as the keyword index (SQLite FTS5) is asked for them: content words without
stopwords, and a MATCH expression that user input cannot steer.

Below retrieval, supersession, curiosity and the dream, which all ask the index by the same words
(as ``memory.when`` reads the time a text names for all of them).
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "don",
        "didn",
        "doesn",
        "isn",
        "wasn",
    ]
)
_TERM = re.compile(r"[^\W_]+", re.UNICODE)


def fts_terms(text: str) -> list[str]:
    """The content words of a query: lower-cased, deduplicated, stopwords removed, at most 64."""
    terms: list[str] = []
    for word in _TERM.findall(text.lower()):
        if word not in STOPWORDS and word not in terms:
            terms.append(word)
    return terms[:64]


def fts_match(terms: list[str]) -> str | None:
    """An FTS5 MATCH expression: quoted terms joined by OR. Quoting neutralises FTS syntax in
    user input (AND, NEAR, column filters, ``*``). None when there is nothing to match."""
    return " OR ".join(f'"{t}"' for t in terms) if terms else None


def fts_query(text: str) -> str | None:
    """``fts_match(fts_terms(text))``: stopwords make OR queries slow, so they are left out."""
    return fts_match(fts_terms(text))
