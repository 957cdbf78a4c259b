"""Secrets known by their shape alone: vendor keys, key blocks, passwords in URLs, cards, IBANs, seed phrases.

Each pattern is gated by literals it cannot match without (found with one regex over the lower-cased
text), so ordinary text skips the patterns entirely: classification stays at microseconds per crystal
on the bulk-ingest path.
"""

from __future__ import annotations

import re

from memory.governance.secrets.seed_words import seed_phrase_spans
from memory.governance.secrets.spans import Span

_Shape = tuple[tuple[str, ...], str, re.Pattern[str]]

# A password in a URL that is a stand-in, not a password: the docs' "user:password@localhost".
PLACEHOLDER_PASSWORDS = frozenset(
    {"password", "pass", "passwd", "pwd", "secret", "pw", "xxx", "xxxx", "changeme", "yourpassword", "***"}
)

_SHAPES: list[_Shape] = [
    (("private key-----",), "key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[A-Za-z0-9+/=\s]*")),
    (("sk-", "pk-", "rk-"), "key", re.compile(r"\b(?:sk|pk|rk)-(?:live-|test-|proj-|ant-)?[A-Za-z0-9_\-]{16,}")),
    (("sk_", "rk_"), "key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    (("akia",), "key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), "key", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    (("github_pat_",), "key", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}")),
    (("glpat-",), "key", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    (("xox",), "key", re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}")),
    (("aiza",), "key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),
    (("eyj",), "key", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    (("bearer",), "key", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9_\-\.=]{20,}")),
    (("hf_",), "key", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    (("npm_",), "key", re.compile(r"\bnpm_[A-Za-z0-9]{36}")),
    (("pypi-",), "key", re.compile(r"\bpypi-[A-Za-z0-9_\-]{40,}")),
    (("shpat_", "shpss_", "shpca_", "shppa_"), "key", re.compile(r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}")),
    (("figd_",), "key", re.compile(r"\bfigd_[A-Za-z0-9_\-]{30,}")),
    (("lin_api_",), "key", re.compile(r"\blin_api_[A-Za-z0-9]{30,}")),
    (("dop_v1_",), "key", re.compile(r"\bdop_v1_[a-f0-9]{64}")),
    (("whsec_",), "key", re.compile(r"\bwhsec_[A-Za-z0-9+/=]{24,}")),
    (("hvs.", "hvb."), "key", re.compile(r"\bhv[sb]\.[A-Za-z0-9_\-]{24,}")),
    (("age-secret-key-",), "key", re.compile(r"\bAGE-SECRET-KEY-1[A-Z0-9]{20,}")),
    (("sg.",), "key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),
    (("key-",), "key", re.compile(r"\bkey-[0-9a-z]{32}\b")),  # Mailgun
    (("hooks.slack.com",), "key", re.compile(r"hooks\.slack\.com/services/[A-Za-z0-9/]{20,}")),
    (("discord.com/api/webhooks", "discordapp.com/api/webhooks"), "key", re.compile(r"api/webhooks/\d+/[\w\-]{30,}")),
    (("otpauth:",), "recovery", re.compile(r"(?i)otpauth://\S*?secret=[A-Z2-7]{16,}")),
    (("accountkey=", "sharedaccesskey="), "key", re.compile(r"(?i)\b(?:Account|SharedAccess)Key=[A-Za-z0-9+/=]{20,}")),
    # A Telegram bot token: the bot's number, a colon, 35 characters.
    ((":aa",), "key", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_\-]{30,}")),
    # A password inside a connection string or a URL.
    (("password=", "pwd="), "password", re.compile(r"(?i)\b(?:password|pwd)=(?!\$\{|\{\{|<|\*)[^;&\s'\"]{3,}")),
    (("://",), "credential-url", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^\s/:@]{1,64}:[^\s/@]{3,128}@[\w.\-]+")),
    # A key in a URL's user part (a Sentry DSN): long, with letters and digits.
    (
        ("://",),
        "credential-url",
        re.compile(r"\bhttps?://(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]{16,}@[\w.\-]+"),
    ),
]
# Every shape above but these matches one unbroken run of 16 characters or more; prose rarely has one,
# so most texts try only these four.
_SHORT_SHAPES = frozenset({"private key-----", "bearer", "password="})
_LONG_RUN = re.compile(r"\S{16}")
_ALWAYS_TRIED = [shape for shape in _SHAPES if shape[0][0] in _SHORT_SHAPES]

# 32 random bytes in hex: an EVM or other private key, unless the text says it is a hash or an id.
_HEX_KEY = re.compile(r"\b(?:0x)?[0-9a-fA-F]{64}\b")
_HASH_WORDS = re.compile(
    r"(?i)\b(?:hash|tx|txn|transaction|block|digest|sha-?256|sha|commit|checksum|merkle|root|id|cid|fingerprint)\b"
)
_CARD = re.compile(r"\b(?:\d[ \-]?){12,18}\d\b")
_DIGIT_RUN = re.compile(r"\d[\d \-]{11,}\d")  # cheap pre-check: a card needs 13+ digits close together
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_IBAN_HINT = re.compile(r"[A-Z]{2}\d\d")


def luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(candidate: str) -> bool:
    """The ISO 13616 check: the rearranged number, letters as 10..35, is 1 modulo 97."""
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def _card_spans(text: str) -> list[Span]:
    if _DIGIT_RUN.search(text) is None:
        return []
    spans = []
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            spans.append(Span(match.start(), match.end(), "card"))
    return spans


def _iban_spans(text: str) -> list[Span]:
    if _IBAN_HINT.search(text) is None:
        return []
    spans = []
    for match in _IBAN.finditer(text):
        value = match.group().rstrip()
        # The longest run may swallow a following word ("… 3M02 606 for"): trim from the end until it checks.
        while len(value.replace(" ", "")) >= 15 and not iban_ok(value):
            value = value[:-1].rstrip()
        if iban_ok(value):
            spans.append(Span(match.start(), match.start() + len(value), "account"))
    return spans


# A default account's name with its password: "admin:admin123", "root / toor1234".
_DEFAULT_ACCOUNTS = frozenset(
    [
        "admin",
        "administrator",
        "root",
        "user",
        "guest",
        "pi",
        "ubuntu",
        "sa",
        "postgres",
        "tomcat",
        "test",
        "deploy",
        "backup",
        "ftp",
    ]
)
_PAIR_SEPARATOR = re.compile(r"(?<=[A-Za-z])(?::|\s/\s)")
_PAIR_PASSWORD = re.compile(r"(?=[^\s/:@]*[\d!#$%^&*])[^\s/:@]{4,}(?![@\w])")


def _default_account_spans(text: str) -> list[Span]:
    spans = []
    for sep in _PAIR_SEPARATOR.finditer(text):
        name = re.search(r"[A-Za-z]+$", text[max(0, sep.start() - 14) : sep.start()])
        if name is None or name.group().lower() not in _DEFAULT_ACCOUNTS:
            continue
        password = _PAIR_PASSWORD.match(text, sep.end())
        if password is not None:
            spans.append(Span(sep.start() - len(name.group()), password.end(), "password"))
    return spans


def _hex_key_spans(text: str) -> list[Span]:
    if len(text) < 64:
        return []
    found = [m for m in _HEX_KEY.finditer(text)]
    if not found or _HASH_WORDS.search(text):
        return []
    return [Span(m.start(), m.end(), "key") for m in found]


def shaped_secrets(text: str) -> list[Span]:
    """Spans of every secret ``text`` holds that its shape alone gives away."""
    spans: list[Span] = []
    lowered = text.lower()
    for hints, kind, pattern in _SHAPES if _LONG_RUN.search(text) else _ALWAYS_TRIED:
        if any(hint in lowered for hint in hints):
            for match in pattern.finditer(text):
                if kind == "credential-url" and _url_password(match.group()) in PLACEHOLDER_PASSWORDS:
                    continue
                spans.append(Span(match.start(), match.end(), kind))
    if ":" in text or " / " in text:
        spans += _default_account_spans(text)
    spans += _card_spans(text)
    spans += _iban_spans(text)
    spans += _hex_key_spans(text)
    spans += seed_phrase_spans(text)
    return spans


def _url_password(url: str) -> str:
    userinfo = url.split("://", 1)[1].rsplit("@", 1)[0]
    return userinfo.split(":", 1)[1].lower() if ":" in userinfo else ""
