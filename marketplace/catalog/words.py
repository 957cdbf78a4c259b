"""The words bounties and listings are matched and searched by, and the FTS5 queries built from them."""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]{3,}")
_COMMON = frozenset({
    "that", "this", "with", "from", "have", "what", "when", "where", "which", "while", "will", "would",
    "should", "could", "into", "onto", "about", "after", "before", "them", "then", "than", "there", "their",
    "these", "those", "your", "yours", "need", "needs", "want", "wants", "some", "more", "most", "very",
    "just", "also", "skill", "skills", "how-to", "using", "make", "does", "done",
})  # fmt: skip
#: Distinct terms in one FTS query at most (8,000 OR-ed phrases take about 0.2 s over 3,000 rows).
#: A gossiped skill (32,000 characters) has fewer; a longer local text is searched by its first ones.
MAX_QUERY_TERMS = 8_000


def significant_words(text: str) -> set[str]:
    """Words of 4+ letters, digits, '-' or '_', lower-cased, without the common ones."""
    return {w for w in _WORD.findall(text.lower()) if w not in _COMMON}


def any_of(terms: Iterable[str]) -> str | None:
    """An FTS5 query matching a row that has any of ``terms``, each as a quoted phrase (so '-' or
    a quote in a term is text, never syntax); None when there is no term."""
    distinct = list(dict.fromkeys(t.strip().lower() for t in terms if t.strip()))[:MAX_QUERY_TERMS]
    if not distinct:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in distinct)
