"""Wallet seed phrases: twelve or more words in a row from the BIP-39 English list.

The list ships with ``eth-account`` (a dependency already); it is read from that package's folder,
without importing the package, the first time a long enough run of plain words is seen. Ordinary
sentences break such a run within a few words ("the", "is" and "my" are not on the list).
"""

from __future__ import annotations

import importlib.util
import re
from functools import cache
from pathlib import Path

from memory.governance.secrets.spans import Span

SEED_MIN_WORDS = 12
_WORD = re.compile(r"[a-z]{3,8}")
# Twelve short lower-case words separated by spaces or commas: the only texts worth a look-up.
_CANDIDATE = re.compile(r"(?:\b[a-z]{3,8}[ ,]+){11,}[a-z]{3,8}\b")


@cache
def bip39_words() -> frozenset[str]:
    """The 2,048 words, or none if the list cannot be found (then only phrasing finds seed phrases)."""
    spec = importlib.util.find_spec("eth_account")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = Path(next(iter(spec.submodule_search_locations))) / "hdaccount" / "wordlist" / "english.txt"
    try:
        return frozenset(path.read_text(encoding="utf-8").split())
    except OSError:
        return frozenset()


def seed_phrase_spans(text: str) -> list[Span]:
    lowered = text.lower()
    if _CANDIDATE.search(lowered) is None:
        return []
    words = bip39_words()
    if not words:
        return []
    spans: list[Span] = []
    run: list[re.Match[str]] = []
    for match in re.finditer(r"[a-z]+", lowered):
        between = lowered[run[-1].end() : match.start()] if run else ""
        if match.group() in words and _WORD.fullmatch(match.group()) and between.strip(" ,") == "":
            run.append(match)
            continue
        if len(run) >= SEED_MIN_WORDS:
            spans.append(Span(run[0].start(), run[-1].end(), "seed"))
        run = [match] if match.group() in words else []
    if len(run) >= SEED_MIN_WORDS:
        spans.append(Span(run[0].start(), run[-1].end(), "seed"))
    return spans
