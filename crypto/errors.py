"""Every error the crypto package raises, in one place.

    CryptoError
    ├── EnvelopeError                 untrusted bytes that are not an acceptable envelope
    │   ├── EnvelopeTooLarge
    │   ├── MalformedEnvelope
    │   ├── UnknownVersion
    │   ├── UnknownKind
    │   ├── BadSignature
    │   ├── Expired
    │   ├── FromFuture
    │   └── Replayed
    ├── KeyFileError                  the node's identity file cannot be used
    │   ├── KeyFileMissing
    │   ├── KeyFileCorrupt
    │   ├── KeyFilePermissions
    │   ├── PassphraseRequired
    │   └── WrongPassphrase
    ├── SealedDataError               a passphrase-sealed blob cannot be opened
    │   └── SealedDataTampered
    ├── GroupSealError                a blob sealed for the device group cannot be opened or made
    ├── DeviceGroupError              a member list that may not follow the one held, or a change it refuses
    └── PairingCodeError              a pairing code that is mistyped, damaged or of another kind (400)

Decoding untrusted input raises only ``EnvelopeError`` subclasses; callers turn
them into verdicts. Each carries the fields a log line or a peer penalty needs.
"""

from __future__ import annotations

from pathlib import Path

from ground.errors import BitterbotError, Invalid


class CryptoError(BitterbotError):
    """Base of every error raised by ``crypto``."""


class EnvelopeError(CryptoError):
    """Bytes from outside are not an acceptable signed envelope."""

    #: short machine-readable reason, stable across releases (used in metrics)
    reason: str = "invalid"


class EnvelopeTooLarge(EnvelopeError):
    reason = "too_large"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"envelope of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit


class MalformedEnvelope(EnvelopeError):
    reason = "malformed"

    def __init__(self, detail: str) -> None:
        super().__init__(f"malformed envelope: {detail}")
        self.detail = detail


class UnknownVersion(EnvelopeError):
    reason = "unknown_version"

    def __init__(self, version: int) -> None:
        super().__init__(f"unknown envelope version {version}")
        self.version = version


class UnknownKind(EnvelopeError):
    reason = "unknown_kind"

    def __init__(self, kind: str) -> None:
        super().__init__(f"unknown envelope kind {kind!r}")
        self.kind = kind


class BadSignature(EnvelopeError):
    reason = "bad_signature"

    def __init__(self, author: bytes, kind: str) -> None:
        super().__init__(f"signature of {kind!r} envelope does not verify for author {author.hex()[:16]}…")
        self.author = author
        self.kind = kind


class Expired(EnvelopeError):
    reason = "expired"

    def __init__(self, ts_ms: int, now_ms: int, max_age_ms: int) -> None:
        super().__init__(f"envelope timestamp {ts_ms} is {now_ms - ts_ms} ms old; at most {max_age_ms} ms accepted")
        self.ts_ms = ts_ms
        self.now_ms = now_ms
        self.max_age_ms = max_age_ms


class FromFuture(EnvelopeError):
    reason = "from_future"

    def __init__(self, ts_ms: int, now_ms: int, max_ahead_ms: int) -> None:
        super().__init__(f"envelope timestamp {ts_ms} is {ts_ms - now_ms} ms ahead; at most {max_ahead_ms} ms accepted")
        self.ts_ms = ts_ms
        self.now_ms = now_ms
        self.max_ahead_ms = max_ahead_ms


class Replayed(EnvelopeError):
    reason = "replayed"

    def __init__(self, author: bytes, nonce: bytes, detail: str = "author and nonce already seen") -> None:
        super().__init__(f"replayed envelope from {author.hex()[:16]}…: {detail}")
        self.author = author
        self.nonce = nonce
        self.detail = detail


class ReplayUndecidable(EnvelopeError):
    """Too old for the replay guard to tell a replay from a first sight: refused, but not a replay
    (under a flood the guard forgets its oldest entries and refuses what it can no longer vouch for)."""

    reason = "replay_undecidable"

    def __init__(self, author: bytes, ts_ms: int, detail: str) -> None:
        super().__init__(f"envelope from {author.hex()[:16]}… at {ts_ms}: {detail}")
        self.author = author
        self.ts_ms = ts_ms
        self.detail = detail


class KeyFileError(CryptoError):
    """The identity key file cannot be used; the message says how to fix it."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"identity key file {path}: {detail}")
        self.path = path
        self.detail = detail


class KeyFileMissing(KeyFileError):
    pass


class KeyFileCorrupt(KeyFileError):
    pass


class KeyFilePermissions(KeyFileError):
    pass


class PassphraseRequired(KeyFileError):
    pass


class WrongPassphrase(KeyFileError):
    pass


class SealedDataError(CryptoError):
    """A passphrase-sealed blob is malformed or cannot be opened."""


class SealedDataTampered(SealedDataError):
    """Authentication failed: wrong passphrase, or the data was altered."""


class InvalidValue(CryptoError, Invalid):
    """A value given to ``crypto`` is wrong (also a ValueError): the message says which and why."""


class GroupSealError(CryptoError):
    """A blob sealed for the person's device group cannot be opened (not for this group, changed on
    the way, an epoch whose key this device does not hold) or made (too large)."""


class PairingCodeError(CryptoError, Invalid):
    """A pairing code that cannot be read: mistyped, cut short, or not a bitterbot pairing code."""


class DeviceGroupError(CryptoError):
    """A device group change that cannot be taken: a member list of another group, older, signed by
    a non-member or forged, a device that left without a new epoch; or one asked that makes no sense."""
