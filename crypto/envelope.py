"""Signed envelopes: the one wire format for everything that crosses the network.

Wire form: a msgpack map ``{v, kind, author, ts_ms, nonce, body, sig}`` in exactly
that key order with minimal-width integers (``Envelope.encode``); any other
encoding of the same fields is refused, so each message has one byte string.
``body`` is opaque bytes (the kind's own msgpack payload), so the signature
covers exactly the bytes that were sent and never depends on re-encoding an
untrusted structure.

The signature covers every field but ``sig``, domain-separated by kind::

    b"bitterbot/v1/" + kind + b"\\x00" + msgpack({v, kind, author, ts_ms, nonce, body})

the map in that key order (canonical), so naming the kind twice (prefix and
map) means a signature for one kind can never verify as another. Because the
wire map is canonical too and ``sig`` is its last entry, a receiver slices the
signed bytes out of the wire bytes instead of re-encoding them.
The original system signed only part of its payloads, so timestamps and tags
could be altered and old messages replayed with a new time; here nothing
outside the signature influences how a message is handled.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any, NamedTuple

import msgpack
import nacl.bindings
import nacl.exceptions

from crypto.errors import (
    BadSignature,
    EnvelopeTooLarge,
    InvalidValue,
    MalformedEnvelope,
    UnknownKind,
    UnknownVersion,
)
from crypto.identity import Identity
from crypto.windows import ReplayGuard, TimestampWindow

ENVELOPE_VERSION = 1
DOMAIN_PREFIX = b"bitterbot/v1/"
NONCE_BYTES = 16
DEFAULT_MAX_ENVELOPE_BYTES = 64 * 1024
_KIND_RE = re.compile(r"[a-z][a-z0-9._\-/]{0,63}")
_FIELD_ORDER = ("v", "kind", "author", "ts_ms", "nonce", "body", "sig")
_FIELDS = frozenset(_FIELD_ORDER)
_MAX_TS_MS = 2**63 - 1


class Envelope(NamedTuple):
    """A decoded envelope. Its signature is checked by ``verify_signature`` or ``open_envelope``.

    A NamedTuple rather than a frozen dataclass: equally immutable and typed, and it is
    built once per received message, where a frozen dataclass's __init__ cost ~2 µs.
    """

    v: int
    kind: str
    author: bytes
    ts_ms: int
    nonce: bytes
    body: bytes
    sig: bytes

    def signing_bytes(self) -> bytes:
        return signing_bytes(self.v, self.kind, self.author, self.ts_ms, self.nonce, self.body)

    def encode(self) -> bytes:
        """The wire form."""
        return _pack(
            {
                "v": self.v,
                "kind": self.kind,
                "author": self.author,
                "ts_ms": self.ts_ms,
                "nonce": self.nonce,
                "body": self.body,
                "sig": self.sig,
            }
        )

    @property
    def message_id(self) -> bytes:
        """A stable 32-byte id: the hash of the signed content (a re-encoded map keeps its id)."""
        return sha256(self.signing_bytes()).digest()

    def body_map(self) -> dict[str, Any]:
        """Decode a body that is a msgpack map, as every kind of ours uses; ``MalformedEnvelope`` if not."""
        value = unpack_untrusted(self.body, max_size=len(self.body))
        if not isinstance(value, dict):
            raise MalformedEnvelope(f"{self.kind} body must be a map")
        return value


def signing_bytes(v: int, kind: str, author: bytes, ts_ms: int, nonce: bytes, body: bytes) -> bytes:
    """The exact bytes an author signs; see the module docstring."""
    rest = _pack({"v": v, "kind": kind, "author": author, "ts_ms": ts_ms, "nonce": nonce, "body": body})
    return DOMAIN_PREFIX + kind.encode("ascii") + b"\x00" + rest


# The canonical wire map ends with the sig entry: fixstr "sig" (4 bytes), bin8 header (2), 64 bytes.
_SIG_ENTRY_BYTES = 4 + 2 + 64
_MAP7, _MAP6 = b"\x87", b"\x86"


def _signing_bytes_from_wire(kind: str, wire: bytes) -> bytes:
    """``signing_bytes`` of a canonical wire encoding, by slicing: the six-entry map is the
    seven-entry one with a different header byte and without its last (sig) entry."""
    return DOMAIN_PREFIX + kind.encode("ascii") + b"\x00" + _MAP6 + wire[1:-_SIG_ENTRY_BYTES]


def pack_body(value: dict[str, Any]) -> bytes:
    """Encode a kind's payload map; keys sorted so equal payloads give equal bytes."""
    return _pack(_sorted_maps(value))


_local = threading.local()


def _pack(value: Any) -> bytes:
    # A reused Packer costs half of msgpack.packb, which builds one per call; Packers are not
    # thread-safe, so one per thread (the p2p host runs in its own thread).
    packer = getattr(_local, "packer", None)
    if packer is None:
        packer = _local.packer = msgpack.Packer(use_bin_type=True)
    packed: bytes = packer.pack(value)
    return packed


def _sorted_maps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_maps(value[k]) for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [_sorted_maps(v) for v in value]
    return value


def seal_envelope(
    identity: Identity,
    kind: str,
    body: bytes,
    *,
    now_ms: int,
    nonce: bytes | None = None,
) -> Envelope:
    """Sign ``body`` as ``kind`` by ``identity`` at ``now_ms`` with a fresh random nonce."""
    if not _KIND_RE.fullmatch(kind):
        raise InvalidValue(f"invalid kind {kind!r}")
    nonce = os.urandom(NONCE_BYTES) if nonce is None else nonce
    if len(nonce) != NONCE_BYTES:
        raise InvalidValue(f"nonce must be {NONCE_BYTES} bytes")
    author = identity.public_key
    sig = identity.sign(signing_bytes(ENVELOPE_VERSION, kind, author, now_ms, nonce, body))
    return Envelope(ENVELOPE_VERSION, kind, author, now_ms, nonce, body, sig)


def unpack_untrusted(data: bytes, *, max_size: int) -> Any:
    """msgpack-decode untrusted bytes; raises only ``MalformedEnvelope``.

    The broad except is deliberate: msgpack raises a zoo of types (ValueError,
    ExtraData, FormatError, StackError, TypeError, UnicodeDecodeError…) and none
    of them may escape as anything but a verdict.
    """
    try:
        return msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=True,
            use_list=True,
            max_bin_len=max_size,
            max_str_len=max_size,
            max_array_len=max_size,
            max_map_len=max_size,
            max_ext_len=0,
        )
    except Exception as exc:  # noqa: BLE001 - see docstring
        raise MalformedEnvelope(f"not msgpack ({type(exc).__name__})") from None


def decode_envelope(
    data: bytes,
    *,
    kinds: Collection[str] | None = None,
    max_bytes: int = DEFAULT_MAX_ENVELOPE_BYTES,
) -> Envelope:
    """Parse and type-check the wire form. Does not verify the signature.

    ``kinds``: the kinds the caller accepts (``None`` accepts any well-formed kind).
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise MalformedEnvelope("expected bytes")
    if len(data) > max_bytes:
        raise EnvelopeTooLarge(len(data), max_bytes)
    data = bytes(data)
    doc = unpack_untrusted(data, max_size=max_bytes)
    if not isinstance(doc, dict):
        raise MalformedEnvelope("top level is not a map")
    if doc.keys() != _FIELDS:
        missing = sorted(_FIELDS - doc.keys())
        extra = sorted(str(k) for k in doc.keys() - _FIELDS)
        raise MalformedEnvelope(f"fields missing {missing} / unexpected {extra}")
    v = doc["v"]
    if type(v) is not int:
        raise MalformedEnvelope("v must be an integer")
    if v != ENVELOPE_VERSION:
        raise UnknownVersion(v)
    kind = doc["kind"]
    if type(kind) is not str:
        raise MalformedEnvelope("kind must be a short lowercase name")
    if kinds is not None:
        if kind not in kinds:  # the policy's kinds are well-formed, so membership is enough
            raise UnknownKind(kind) if _KIND_RE.fullmatch(kind) else MalformedEnvelope("kind must be a short name")
    elif not _KIND_RE.fullmatch(kind):
        raise MalformedEnvelope("kind must be a short lowercase name")
    author, nonce, body, sig, ts_ms = doc["author"], doc["nonce"], doc["body"], doc["sig"], doc["ts_ms"]
    if type(author) is not bytes or len(author) != 32:
        raise MalformedEnvelope("author must be a 32-byte Ed25519 public key")
    if type(ts_ms) is not int or not 0 <= ts_ms <= _MAX_TS_MS:
        raise MalformedEnvelope("ts_ms must be a non-negative integer")
    if type(nonce) is not bytes or len(nonce) != NONCE_BYTES:
        raise MalformedEnvelope(f"nonce must be {NONCE_BYTES} bytes")
    if type(body) is not bytes:
        raise MalformedEnvelope("body must be bytes")
    if type(sig) is not bytes or len(sig) != 64:
        raise MalformedEnvelope("sig must be 64 bytes")
    # One message, one byte string: msgpack allows several encodings of the same map (key order,
    # int and length widths), and a relay could otherwise mint "new" messages that byte-level
    # dedup misses. ``doc`` keeps the wire's key order: check it, then re-pack to check the widths.
    if tuple(doc) != _FIELD_ORDER or _pack(doc) != data:
        raise MalformedEnvelope("not in canonical encoding")
    return Envelope(v, kind, author, ts_ms, nonce, body, sig)


def verify_signature(envelope: Envelope) -> None:
    """Raise ``BadSignature`` unless the author's key signed every field."""
    _verify(envelope, envelope.signing_bytes())


def _verify(envelope: Envelope, signed: bytes) -> None:
    try:
        nacl.bindings.crypto_sign_open(envelope.sig + signed, envelope.author)
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError, ValueError):
        # ValueError: the author bytes are not a usable key (e.g. a small-order point)
        raise BadSignature(envelope.author, envelope.kind) from None


@dataclass(frozen=True, slots=True)
class EnvelopePolicy:
    """Everything a receiver checks besides the signature."""

    kinds: frozenset[str]
    max_bytes: int = DEFAULT_MAX_ENVELOPE_BYTES
    window: TimestampWindow = field(default_factory=TimestampWindow)


def open_envelope(
    data: bytes,
    policy: EnvelopePolicy,
    *,
    now_ms: int,
    replay: ReplayGuard | None = None,
) -> Envelope:
    """The whole receive path: size, decode, version, kind, time window, signature, replay.

    The replay guard records the envelope only after its signature verified, so
    forged traffic cannot fill it or block a genuine message.
    """
    envelope = decode_envelope(data, kinds=policy.kinds, max_bytes=policy.max_bytes)
    policy.window.check(envelope.ts_ms, now_ms)
    _verify(envelope, _signing_bytes_from_wire(envelope.kind, bytes(data)))
    if replay is not None:
        replay.check_and_record(envelope.author, envelope.nonce, envelope.ts_ms, now_ms)
    return envelope
