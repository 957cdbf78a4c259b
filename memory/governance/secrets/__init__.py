"""Finding secrets in free text: passwords, PINs, keys, tokens, credentials, card and account numbers.

A secret is found in one of two ways:

- by its **shape** (``shapes``): a vendor key (``sk_live_…``, ``ghp_…``), a private key block, a URL with a
  password in it, a card number that passes Luhn, an IBAN whose checksum holds, a 12-word seed phrase;
- by its **phrasing** (``phrasing``): a word that says a credential follows ("pw", "Passwort", "door
  code", "api key", "sort code") near a value that looks like one ("hunter2", "4821", a quoted phrase,
  a long random string). People write "the staging db pw is hunter2", not ``password=hunter2``.

Both return spans, so the same finding both classifies a text and redacts it. Everything here is pure.
"""

from __future__ import annotations

from memory.governance.secrets.phrasing import phrased_secrets
from memory.governance.secrets.shapes import shaped_secrets
from memory.governance.secrets.spans import Span, merged


def find_secrets(text: str) -> list[Span]:
    """Every secret in ``text``, as non-overlapping spans in order."""
    return merged([*shaped_secrets(text), *phrased_secrets(text)])


def holds_secret(text: str) -> bool:
    return bool(shaped_secrets(text)) or bool(phrased_secrets(text))


__all__ = ["Span", "find_secrets", "holds_secret"]
