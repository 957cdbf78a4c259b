"""Secrets told in words: a cue ("the staging db pw", "door code", "sort code") near a value that fits it.

Within one clause, a value counts for a cue when:

- it is strong (mixed case, digits and symbols, a quoted literal, a long random string) and lies within
  ``AFTER`` words after the cue, or for a password within ``BEFORE`` words before it
  ("Tr0ub4dor&3 gets you into the NAS");
- it is weaker ("hunter2", "4821") and lies right after the cue or right after a word that introduces a
  value ("is", ":", "=", "to", "—"). "The password is stored in the vault" has no value; "the password is
  hunter2" does.

A value right after "in", "under" or "from" is a place, not a value ("the key lives in 1Password").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.governance.secrets.cues import Cue, Family, cues_in, may_hold_cue
from memory.governance.secrets.spans import Span
from memory.governance.secrets.values import Strength, digit_count, is_password_alone, strength, value_bounds

AFTER = 8
BEFORE = 6
SEED_WORDS = 12

# Words that introduce a value, in the languages the cues cover.
_INTRODUCERS = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "=",
        ":",
        "-",
        "–",
        "—",
        "->",
        "=>",
        "/",
        "to",
        "as",
        "lautet",
        "ist",
        "est",
        "es",
        "è",
        "é",
        "är",
        "er",
        "on:",
        "now",
        "still",
        "just",
        "simply:",
        "be",
    ]
)
_FILLER = frozenset({"now", "still", "just", "simply", "currently", "always", "literally", "the", "my", "our"})
_PLACES = frozenset({"in", "under", "inside", "at", "from", "into", "via", "behind", "on", "called", "named"})
_PAST_TIME = frozenset({"in", "since", "from", "until", "till", "by", "before", "after", "of", "around"})
_CLAUSES = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])|\n+|;\s+|\s+\|\s+")
# A quoted phrase is one word ("'correct horse battery staple'"): opened after a space or a bracket.
_QUOTED = re.compile(
    r"(?:(?<=^)|(?<=[\s(\[:=,]))"
    r"(?:'[^'\n]{3,100}'|\"[^\"\n]{3,100}\"|“[^”\n]{3,100}”|‘[^’\n]{3,100}’)\S*"
)
# "key=value" and "pw:value" are three words; "https://…", "10:30" and "7012345678:AA…" stay one.
_SPLIT = re.compile(r"=|(?<=[A-Za-z_\])]):(?!//)")
_MIN_DIGITS = {Family.PIN: 3, Family.PASSWORD: 4, Family.ACCOUNT: 6, Family.RECOVERY: 6}


@dataclass(frozen=True, slots=True)
class _Word:
    start: int
    end: int
    text: str
    strength: Strength


def _pieces(clause: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    at = 0
    for quoted in _QUOTED.finditer(clause):
        if cues_in(quoted.group()):
            continue  # "'X-API-Key: 4b9f…'" holds its own cue and value: read it word by word
        spans += _plain_pieces(clause, at, quoted.start())
        spans.append((quoted.start(), quoted.end()))
        at = quoted.end()
    return spans + _plain_pieces(clause, at, len(clause))


def _plain_pieces(clause: str, start: int, end: int) -> list[tuple[int, int]]:
    spans = []
    for token in re.finditer(r"\S+", clause[start:end]):
        at = start + token.start()
        text = token.group()
        cut = 0
        for sep in _SPLIT.finditer(text):
            if sep.start() > cut:
                spans.append((at + cut, at + sep.start()))
            spans.append((at + sep.start(), at + sep.end()))
            cut = sep.end()
        if cut < len(text):
            spans.append((at + cut, at + len(text)))
    return spans


def _words(clause: str, offset: int) -> list[_Word]:
    return [
        _Word(offset + start, offset + end, clause[start:end], strength(clause[start:end]))
        for start, end in _pieces(clause)
    ]


def _span(first: _Word, last: _Word, kind: str) -> Span:
    start, _ = value_bounds(first.text)
    _, end = value_bounds(last.text)
    return Span(first.start + start, last.start + end, kind)


def _introduces(word: _Word) -> bool:
    lowered = word.text.lower()
    return lowered in _INTRODUCERS or lowered.endswith((":", "=")) or lowered in {"–", "—"}


def _reachable(words: list[_Word], at: int, cue_last: int) -> bool:
    """Whether the word at ``at`` sits where a value is told: next to the cue, or after an introducer."""
    if at - cue_last <= 2 and all(w.text.lower() not in _PLACES for w in words[cue_last + 1 : at]):
        return True
    back = at - 1
    while back > cue_last and words[back].text.lower() in _FILLER:
        back -= 1
    return back >= cue_last and _introduces(words[back])


def _is_place(words: list[_Word], at: int) -> bool:
    return at > 0 and words[at - 1].text.lower() in _PLACES


def _is_past_year(words: list[_Word], at: int) -> bool:
    digits = re.sub(r"\D", "", words[at].text)
    return len(digits) == 4 and 1900 <= int(digits) <= 2099 and at > 0 and words[at - 1].text.lower() in _PAST_TIME


def _digits_from(words: list[_Word], at: int, end: int) -> tuple[int, int]:
    """The number of digits in the run of numbers starting at ``at`` (groups like "1 9 8 4"), and its end."""
    total, last = 0, at
    for i in range(at, end):
        if words[i].strength is not Strength.DIGITS:
            if words[i].text.lower() in {"left,", "right,", "left", "right", "then", "and"}:
                continue  # a dial's combination: "24 left, 13 right, 7 left"
            break
        total += digit_count(words[i].text)
        last = i
    return total, last


def _after(words: list[_Word], cue: Cue, first: int, last: int) -> Span | None:
    end = min(len(words), last + 1 + AFTER)
    for at in range(last + 1, end):
        word = words[at]
        if word.strength is Strength.NONE or _is_place(words, at):
            continue
        reachable = _reachable(words, at, last)
        if word.strength is Strength.DIGITS:
            needed = _MIN_DIGITS.get(cue.family)
            if needed is None or not reachable or _is_past_year(words, at):
                continue
            total, run_end = _digits_from(words, at, end)
            if total >= needed:
                return _span(word, words[run_end], cue.family.value)
            continue
        if cue.family is Family.ACCOUNT:
            continue  # an account's value is a number (an IBAN is found by its checksum)
        if word.strength is Strength.STRONG or reachable:
            return _span(word, word, cue.family.value)
    return None


def _before(words: list[_Word], cue: Cue, first: int) -> Span | None:
    for at in range(first - 1, max(-1, first - 1 - BEFORE), -1):
        word = words[at]
        if word.strength is Strength.STRONG or (
            word.strength is Strength.WEAK and (at == first - 1 or _introduces(words[at + 1]))
        ):
            return _span(word, word, cue.family.value)
    return None


def _seed_after(clause: str, offset: int, cue: Cue) -> Span | None:
    rest = clause[cue.end - offset :]
    match = re.search(rf"(?:\b[a-z]{{3,8}}\b[\s,]+){{{SEED_WORDS - 1},}}\b[a-z]{{3,8}}\b", rest)
    if match is None or match.start() > 40:
        return None
    return Span(cue.end + match.start(), cue.end + match.end(), "seed")


def _in_clause(clause: str, offset: int) -> list[Span]:
    cues = cues_in(clause)
    if not cues:
        return []
    words = _words(clause, offset)
    spans = []
    for cue in cues:
        start, end = cue.start + offset, cue.end + offset
        covering = [i for i, w in enumerate(words) if w.start < end and w.end > start]
        if not covering:
            continue
        first, last = covering[0], covering[-1]
        if cue.family is Family.SEED:
            seed = _seed_after(clause, offset, Cue(cue.family, start, end, cue.word))
            if seed is not None:
                spans.append(seed)
            continue
        found = _after(words, cue, first, last)
        if found is None and cue.family is Family.PASSWORD:
            found = _before(words, cue, first)
        if found is not None:
            spans.append(found)
    return spans


_LONG_WORD = re.compile(r"\S{8,}")
_HAS_SYMBOL = re.compile(r"[!#$%^&*+=?~|\\<>]")


def _passwords_alone(text: str) -> list[Span]:
    if _HAS_SYMBOL.search(text) is None:
        return []
    return [
        Span(m.start() + value_bounds(m.group())[0], m.start() + value_bounds(m.group())[1], "password")
        for m in _LONG_WORD.finditer(text)
        if is_password_alone(m.group())
    ]


def phrased_secrets(text: str) -> list[Span]:
    spans: list[Span] = _passwords_alone(text)
    if not may_hold_cue(text.lower()):
        return spans
    at = 0
    for piece in _CLAUSES.split(text):
        offset = text.find(piece, at)
        at = offset + len(piece)
        spans += _in_clause(piece, offset)
    return spans


__all__ = ["phrased_secrets"]
