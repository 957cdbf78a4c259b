"""Does one word of a text look like a credential's value? ("hunter2" yes, "stored" no, "getpass()" no.)

A value is judged alone, without its sentence; ``phrasing`` decides whether a cue makes it a secret.
"""

from __future__ import annotations

import re
from enum import Enum

_QUOTES = "'\"`‘’“”"
_LEADING = "([{<" + _QUOTES
_TRAILING = ")]}>,.;:!?" + _QUOTES
_SYMBOLS = set("!@#$%^&*+=?~|\\<>/")  # not "-", "_", "." or "'": those join ordinary words too

# Stand-ins people write where a value goes, and code that reads one.
_PLACEHOLDER = re.compile(r"(?i)x{3,}|\*{3,}|\.{3}|…|\byour[-_ ]|-here\b|_here\b|changeme|redacted|placeholder|<[^>]*>")
_CODE = re.compile(r"[(){}\[\]]|\$\{|\$[A-Z_]{2,}|^f['\"]|\w\.\w+\(")
_ALL_CAPS_NAME = re.compile(r"[A-Z][A-Z0-9_]*_[A-Z0-9_]+|[A-Z]{2,}")  # an environment variable's name
# Words with digits that are not secrets: times, ordinals, units, versions, sizes, amounts.
_ORDINARY_WITH_DIGITS = re.compile(
    r"(?i)\d+(?:am|pm|st|nd|rd|th|h|m|s|ms|k|km|kg|g|mb|gb|tb|kb|kwh|x|px|hz|ghz|mhz|p|fps|eur|usd|%)"
    r"|v?\d+(?:\.\d+)+[a-z]?|\d+[.,:/]\d+(?:[.,:/]\d+)*|#[0-9a-f]{3,6}|0x[0-9a-f]{1,16}"
)
# Public things that look random: peer ids, content ids, addresses, SSH public keys, digests.
_PUBLIC = re.compile(
    r"12D3KooW\w+|Qm[1-9A-HJ-NP-Za-km-z]{44}|bafy[a-z2-7]{20,}|bc1[a-z0-9]{20,}|0x[0-9a-fA-F]{40}"
    r"|sha(?:256|512|1):\w+|ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-\w+|AAAA[A-Za-z0-9+/]{20,}=*"
    r"|[\w.+\-]+@[\w\-]+\.[\w.\-]+|[a-z][a-z0-9+.\-]*://\S*|www\.\S+|/\S*/\S*|\w+\.(?:com|org|net|io|dev)\b"
)
_BLOB = re.compile(r"[A-Za-z0-9+/=_\-.~:]{16,}")
_DIGITS_ONLY = re.compile(r"[#*]?\d(?:[\d\-]*\d)?[#*]?")
_GROUPED_CODE = re.compile(r"[A-Z0-9]{4,6}(?:-[A-Z0-9]{4,6}){3,}")  # a recovery key: ABCD-EFGH-IJKL-MNOP
_BASE32 = re.compile(r"[A-Z2-7]{16,}=*")
_WORD_CHAIN = re.compile(r"[A-Za-z]{3,}(?:-[A-Za-z]{3,}){2,}")  # "correct-horse-battery"; not "up-to-date"
_BYTE_LIST = re.compile(r"\[(?:\d{1,3},\s*){15,}\d{1,3}\]")


class Strength(Enum):
    NONE = 0
    DIGITS = 1  # a number: a PIN, a code, part of an account number
    WEAK = 2  # letters with a digit ("hunter2", "famcal2025"): a value only right after its cue
    STRONG = 3  # mixed case, digits and symbols, a quoted literal, or a long random string


def trimmed(word: str) -> str:
    return word.lstrip(_LEADING).rstrip(_TRAILING)


def is_quoted(word: str) -> bool:
    stripped = word.rstrip(",.;:!?)")
    return len(stripped) >= 3 and stripped[0] in _QUOTES and stripped[-1] in _QUOTES


def strength(word: str) -> Strength:
    """How strongly one whitespace-separated word (or a quoted phrase) looks like a credential's value."""
    if _BYTE_LIST.fullmatch(word.rstrip(",.;")):
        return Strength.STRONG
    if is_quoted(word):
        inner = word.rstrip(",.;:!?)")[1:-1].strip()
        if len(inner) < 4 or _PLACEHOLDER.search(inner) or _ALL_CAPS_NAME.fullmatch(inner):
            return Strength.NONE
        return Strength.STRONG
    if _CODE.search(word):
        return Strength.NONE
    value = trimmed(word)
    if not value or _PLACEHOLDER.search(value) or _PUBLIC.fullmatch(value):
        return Strength.NONE
    if _DIGITS_ONLY.fullmatch(value):
        return Strength.DIGITS
    if _GROUPED_CODE.fullmatch(value):
        return Strength.STRONG
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    if not has_alpha:
        return Strength.NONE
    if _BLOB.fullmatch(value) and (has_digit or _BASE32.fullmatch(value)):
        return Strength.STRONG
    # Trailing "!" and "?" were trimmed: "Welcome123!" keeps its digits, "worked!" is a word.
    has_symbol = any(ch in _SYMBOLS for ch in value)
    # A capital after the first letter ("MiCasa", "Dance4Ever"); a capitalised word is not mixed case.
    has_inner_capital = any(ch.isupper() for ch in value[1:]) and any(ch.islower() for ch in value)
    classes = sum((has_digit, has_symbol, has_inner_capital))
    if len(value) >= 6 and classes >= 2:
        return Strength.STRONG
    if len(value) >= 5 and has_digit and not _ORDINARY_WITH_DIGITS.fullmatch(value):
        return Strength.WEAK
    if (len(value) >= 6 and has_symbol) or _WORD_CHAIN.fullmatch(value):
        return Strength.WEAK
    return Strength.NONE


def is_password_alone(word: str) -> bool:
    """A word that needs no cue: eight characters or more with a digit, a symbol inside and a capital after
    the first letter ("Fjord!Whale#12"). A hashtag or a handle is not one."""
    value = trimmed(word)
    if len(value) < 8 or value[0] in "#@" or _CODE.search(word) or _PUBLIC.fullmatch(value):
        return False
    return (
        any(ch.isdigit() for ch in value)
        and any(ch in _SYMBOLS for ch in value[1:])
        and any(ch.isupper() for ch in value[1:])
        and any(ch.islower() for ch in value)
        and not _PLACEHOLDER.search(value)
    )


def value_bounds(word: str) -> tuple[int, int]:
    """Where the value sits inside ``word``: quotes, brackets and a trailing comma or full stop left out
    (a trailing "!" stays: it may be the password's own)."""
    if is_quoted(word):
        body = word.rstrip(",.;:!?)")
        return 1, len(body) - 1
    start = len(word) - len(word.lstrip(_LEADING))
    end = len(word.rstrip(",.;:)]}>" + _QUOTES))
    return (start, end) if end > start else (0, len(word))


def digit_count(word: str) -> int:
    return sum(ch.isdigit() for ch in word)
