"""A crystal's sensitivity, and who may see a crystal: the rules every read path and every write
follows. Plain functions over plain data, below both the store (which applies ``visibility_sql`` on
every read and the classification in its v18 migration) and the intake (which classifies each new
crystal), so that the store does not import ``memory.governance``, the folder that works on it."""

from __future__ import annotations

import re

from memory.governance.secrets import holds_secret
from memory.model import HIDDEN_LIFECYCLES, CallerScope, Crystal, Lifecycle, Scope, Sensitivity

# Each pattern is gated by literals it cannot match without (checked with ``in`` on the
# lower-cased text, in C): ordinary text then skips the regexes entirely, which keeps
# classification at a few microseconds per crystal on the bulk-ingest path.
_DIGITS = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9")
_Gated = tuple[tuple[str, ...], re.Pattern[str]]

# Personal data about a person.
_PERSONAL_PATTERNS: list[_Gated] = [
    (("@",), re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b")),  # e-mail
    (("+",), re.compile(r"(?<![\w+])\+\d{1,3}[\s\-.]?(?:\(?\d{1,4}\)?[\s\-.]?){2,5}\d{2,4}\b")),  # intl phone
    (_DIGITS, re.compile(r"(?<!\w)\(?\d{3}\)?[\s\-.]\d{3}[\s\-.]\d{4}\b")),  # North American phone
    (_DIGITS, re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),  # US SSN
    (_DIGITS, re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}\b")),  # IBAN
    (
        ("birth", "born on", "address", "passport"),
        re.compile(r"(?i)\b(?:date of birth|born on|my address is|home address|passport (?:number|no))\b"),
    ),
]


def _hint_finder(patterns: list[_Gated]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(h) for hints, _ in patterns for h in hints))


_PERSONAL_HINTS = _hint_finder(_PERSONAL_PATTERNS)
#: Every digit pattern above needs a digit, a separator and a digit in a row (a phone number, an SSN),
#: or two capitals and two digits (an IBAN): text without either skips them (most text with digits).
_DIGIT_SHAPES = re.compile(r"\d[\s\-.]\d|[A-Z]{2}\d\d")


def _matches(patterns: list[_Gated], hints_found: re.Pattern[str], text: str, lowered: str) -> bool:
    if hints_found.search(lowered) is None:  # one pass for every hint: most text has none
        return False
    shaped: bool | None = None
    for hints, pattern in patterns:
        if hints is _DIGITS:
            shaped = _DIGIT_SHAPES.search(text) is not None if shaped is None else shaped
            if not shaped:
                continue
        if any(hint in lowered for hint in hints) and pattern.search(text):
            return True
    return False


def classify_sensitivity(text: str) -> Sensitivity:
    """Confidential if the text holds a secret (a password, PIN, key, token, card or account number, told
    in any of the ways ``memory.governance.secrets`` knows); personal if it holds personal data; else normal."""
    if holds_secret(text):
        return Sensitivity.CONFIDENTIAL
    lowered = text.lower()
    if _matches(_PERSONAL_PATTERNS, _PERSONAL_HINTS, text, lowered):
        return Sensitivity.PERSONAL
    return Sensitivity.NORMAL


_STRICTNESS = [Sensitivity.NORMAL, Sensitivity.PERSONAL, Sensitivity.CONFIDENTIAL]


def stricter(claimed: Sensitivity, text: str) -> Sensitivity:
    """The stricter of what a file calls a text and what this node's rules call it: a file may make
    a text more private, never less (a secret called "normal" would reach MEMORY.md)."""
    return max(claimed, classify_sensitivity(text), key=_STRICTNESS.index)


def is_visible(
    crystal: Crystal, caller: CallerScope, now_ms: int, *, include_archived: bool = False, include_held: bool = True
) -> bool:
    """The one rule every read path follows (``visibility_sql`` is its SQL twin). ``include_held``:
    whether crystals held in quarantine count (a lookup by id shows them; searches do only when asked)."""
    if crystal.lifecycle is Lifecycle.EXPIRED:
        return False
    if crystal.quarantined and not include_held:
        return False
    if crystal.expires_at_ms is not None and crystal.expires_at_ms <= now_ms:
        return False
    if crystal.lifecycle is Lifecycle.ARCHIVED and not include_archived:
        return False
    if caller is CallerScope.LOCAL:
        return True
    if crystal.sensitivity is Sensitivity.CONFIDENTIAL:
        return False
    if caller is CallerScope.SHARED:
        return crystal.scope in (Scope.SHARED, Scope.PUBLIC)
    return crystal.scope is Scope.PUBLIC and crystal.sensitivity is Sensitivity.NORMAL


def visibility_sql(
    caller: CallerScope, *, include_archived: bool, include_held: bool = False, alias: str = "c"
) -> tuple[str, dict[str, object]]:
    """A WHERE fragment (with named parameters, ``:now_ms`` supplied by the caller) equal to ``is_visible``.
    Unlike it, crystals held in quarantine are left out unless ``include_held``: every search asks."""
    hidden = [Lifecycle.EXPIRED.value] if include_archived else sorted(h.value for h in HIDDEN_LIFECYCLES)
    params: dict[str, object] = {f"hidden_{i}": v for i, v in enumerate(hidden)}
    clauses = [
        f"{alias}.lifecycle NOT IN ({', '.join(':' + k for k in params)})",
        f"({alias}.expires_at_ms IS NULL OR {alias}.expires_at_ms > :now_ms)",
    ]
    if not include_held:
        clauses.append(f"{alias}.quarantined = 0")
    if caller is CallerScope.SHARED:
        clauses.append(f"{alias}.sensitivity != 'confidential' AND {alias}.scope IN ('shared', 'public')")
    elif caller is CallerScope.PUBLIC:
        clauses.append(f"{alias}.sensitivity = 'normal' AND {alias}.scope = 'public'")
    return " AND ".join(clauses), params
