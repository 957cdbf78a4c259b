"""Trust anchors: the management nodes' public keys, and key rotation statements.

Management keys come from the node's config. Only they may sign weather events
and skill endorsements. A management node that rotates its key publishes a
rotation statement: an envelope of kind ``identity.rotation`` authored by the
old key, whose body names the new key and carries the new key's signature over
(old, new) as proof that its holder agreed. Applying an accepted statement moves
the anchor from the old key to the new one and never trusts the old key again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import nacl.exceptions
import nacl.signing

from crypto.envelope import Envelope, pack_body, seal_envelope, verify_signature
from crypto.errors import BadSignature, InvalidValue, MalformedEnvelope
from crypto.identity import Identity

ROTATION_KIND = "identity.rotation"
_ACCEPT_DOMAIN = b"bitterbot/v1/identity.rotation.accept\x00"


def parse_public_key(text: str) -> bytes:
    """A 64-hex-digit Ed25519 public key; ``ValueError`` with a readable message otherwise."""
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise InvalidValue(f"{text!r} is not hex") from None
    if len(key) != 32:
        raise InvalidValue(f"an Ed25519 public key is 64 hex digits, got {len(text)}")
    try:
        nacl.signing.VerifyKey(key)
    except (nacl.exceptions.ValueError, ValueError, TypeError):
        raise InvalidValue(f"{text!r} is not an Ed25519 public key") from None
    return key


@dataclass(frozen=True, slots=True)
class KeyRotation:
    old_key: bytes
    new_key: bytes
    ts_ms: int


def make_rotation(old: Identity, new: Identity, *, now_ms: int) -> Envelope:
    """The statement by which ``old`` hands its standing over to ``new``."""
    accept_sig = new.sign(_ACCEPT_DOMAIN + old.public_key + new.public_key)
    body = pack_body({"new_key": new.public_key, "new_sig": accept_sig})
    return seal_envelope(old, ROTATION_KIND, body, now_ms=now_ms)


def verify_rotation(envelope: Envelope) -> KeyRotation:
    """Check both signatures of a rotation statement. Raises ``EnvelopeError`` subclasses."""
    if envelope.kind != ROTATION_KIND:
        raise MalformedEnvelope(f"expected {ROTATION_KIND}, got {envelope.kind}")
    verify_signature(envelope)
    body = envelope.body_map()
    new_key, new_sig = body.get("new_key"), body.get("new_sig")
    if type(new_key) is not bytes or len(new_key) != 32 or type(new_sig) is not bytes or len(new_sig) != 64:
        raise MalformedEnvelope("rotation body needs new_key (32 bytes) and new_sig (64 bytes)")
    if new_key == envelope.author:
        raise MalformedEnvelope("a key cannot rotate to itself")
    try:
        nacl.signing.VerifyKey(new_key).verify(_ACCEPT_DOMAIN + envelope.author + new_key, new_sig)
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.ValueError, ValueError):
        raise BadSignature(new_key, ROTATION_KIND) from None
    return KeyRotation(envelope.author, new_key, envelope.ts_ms)


class TrustAnchors:
    """The set of management keys a node trusts."""

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        self._keys: set[bytes] = set(keys)
        self._retired: set[bytes] = set()

    @classmethod
    def from_hex(cls, keys: Iterable[str]) -> TrustAnchors:
        return cls(parse_public_key(k) for k in keys)

    def is_management(self, key: bytes) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(sorted(self._keys))

    def apply_rotation(self, rotation: KeyRotation) -> bool:
        """Move trust from the old key to the new; returns False if the old key was not an anchor."""
        if rotation.old_key not in self._keys or rotation.new_key in self._retired:
            return False
        self._keys.discard(rotation.old_key)
        self._retired.add(rotation.old_key)
        self._keys.add(rotation.new_key)
        return True
