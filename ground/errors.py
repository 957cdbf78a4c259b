"""The base of every error our packages raise, and the kinds a client is told apart by.

BitterbotError                  every package's own tree hangs below it (crypto, memory, p2p, …)
├── Unavailable                 what the command needs is not here now: a part that is off, no chain (503)
├── NotFound                    what was asked for is not here (also a LookupError: 404)
├── Invalid                     a value we were given is wrong (also a ValueError: 400)
│   └── FieldError              a field of an untrusted document is missing or wrong
└── WiringError                 parts were put together wrong: a bug of ours, never the caller's (500)

A package's error says what it is in its own tree and, where it is one, which kind too: the
market's "no chain" is a ``MarketError`` and ``Unavailable``.
"""

from __future__ import annotations


class BitterbotError(Exception):
    """Base of every error raised by our packages."""


class Unavailable(BitterbotError):
    """What the request needs is not available on this node now (a client may retry later)."""


class NotFound(BitterbotError, LookupError):
    """What was asked for is not here (a listing, a crystal): the message says what."""


class Invalid(BitterbotError, ValueError):
    """A value we were given is wrong: the message says which and why."""


class WiringError(BitterbotError):
    """The program's own parts were put together wrong (two consumers of one kind, a command on a
    missing group): a bug of ours, raised when the node is built, never for a caller's input."""


class FieldError(Invalid):
    """A field of an untrusted document (a gossip body, a stream message) is missing or wrong."""
