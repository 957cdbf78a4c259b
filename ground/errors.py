"""The base of every error our packages raise, and the kinds a client is told apart by.

BitterbotError                  every package's own tree hangs below it (crypto, memory, p2p, …)
├── Unavailable                 what the command needs is not here now: a part that is off, no chain (503)
└── FieldError                  a field of an untrusted document is missing or wrong (also a ValueError)

A package's error says what it is in its own tree and, where it is one, which kind too: the
market's "no chain" is a ``MarketError`` and ``Unavailable``.
"""

from __future__ import annotations


class BitterbotError(Exception):
    """Base of every error raised by our packages."""


class Unavailable(BitterbotError):
    """What the request needs is not available on this node now (a client may retry later)."""


class FieldError(BitterbotError, ValueError):
    """A field of an untrusted document (a gossip body, a stream message) is missing or wrong."""
