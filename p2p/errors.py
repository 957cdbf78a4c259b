"""Every error the p2p package raises.

P2PError (a ``ground.errors.BitterbotError``)
├── SchemaError        a gossip body does not match its kind's schema (also a ``FieldError``, a ValueError;
│                      the field parsers of ``ground.fields`` raise ``FieldError`` itself)
├── RequestFailed      a direct request to a peer could not be made or answered (also a ConnectionError)
│   ├── ProtocolRefused  the peer does not speak the request's protocol
│   ├── PeerUnreachable  no address of the peer could be dialled, directly or through a relay
│   └── StreamEnded      the stream ended in the middle of a frame
├── RequestTimedOut    a peer did not answer in time (also a TimeoutError: 504)
└── HostNotRunning     the libp2p host is not started, or already stopped
"""

from __future__ import annotations

from ground.errors import BitterbotError, FieldError, Invalid, Unavailable


class P2PError(BitterbotError):
    """Base of every error raised by ``p2p``."""


class SchemaError(P2PError, FieldError):
    """A body that does not match its kind's schema."""


class RequestFailed(P2PError, ConnectionError):
    """A direct request could not be made or answered (no route, protocol refused, stream reset)."""


class ProtocolRefused(RequestFailed):
    """The peer does not speak the request's protocol (it said so, or its identify did): a peer of
    another kind, such as a js-libp2p or go-libp2p node without our protocols, not a broken connection."""


class PeerUnreachable(RequestFailed):
    """No address of the peer could be dialled, directly or through a relay: the message says why each failed."""


class StreamEnded(RequestFailed):
    """The stream ended before the frame did."""


class RequestTimedOut(P2PError, TimeoutError):
    """A peer did not answer a direct request in time."""


class HostNotRunning(P2PError, Unavailable):
    """The libp2p host is not running: not started yet, or stopped."""

    def __init__(self, message: str = "the p2p host is not running") -> None:
        super().__init__(message)


class InvalidValue(P2PError, Invalid):
    """A value given to ``p2p`` is wrong (also a ValueError): the message says which and why."""
