"""Sealing for a person's device group (docs/design/devices.md): what one device writes for the
others, readable by members holding the group key of its epoch and by no one on the way.

Following the seed (memory-crystal, ``002_*``): AES-256-GCM, and an HMAC-SHA256 over everything
sent that is checked before anything is decrypted, under two keys derived from the group key (HKDF),
so a blob from anyone without the key is refused by one cheap MAC and never reaches the cipher.
Sizes are padded up to a bucket, so a relay sees how many blobs pass, not how long their words are.

    sealed = magic(4) | epoch(4) | nonce(12) | ciphertext(bucket + 16) | hmac(32)

The header a caller binds (the group id, the operation's author and number) is associated data:
a blob moved to another group, epoch or operation fails its MAC.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from crypto.errors import GroupSealError

MAGIC = b"bbg1"
#: Padded sizes (the plaintext with its 4-byte length); past the largest a blob is refused.
BUCKETS = (256, 1_024, 4_096, 16_384, 65_536)
MAX_PLAINTEXT = BUCKETS[-1] - 4
_HEAD = struct.Struct(">4sI12s")
_MAC_BYTES = 32
_TAG_BYTES = 16


@dataclass(frozen=True, slots=True)
class GroupKey:
    """The group's key of one epoch: a new epoch begins each time a device is removed."""

    epoch: int
    secret: bytes  # 32 random bytes, never sent to anyone outside the group

    @classmethod
    def generate(cls, epoch: int) -> GroupKey:
        return cls(epoch, os.urandom(32))

    def _keys(self) -> tuple[bytes, bytes]:
        derived = HKDF(hashes.SHA256(), 64, salt=None, info=b"bitterbot group box v1").derive(self.secret)
        return derived[:32], derived[32:]


def padded_size(length: int) -> int:
    """The bucket a plaintext of ``length`` bytes is padded to."""
    for bucket in BUCKETS:
        if length + 4 <= bucket:
            return bucket
    raise GroupSealError(f"{length} bytes is more than a sealed blob holds ({MAX_PLAINTEXT})")


def seal(key: GroupKey, bound: bytes, plaintext: bytes) -> bytes:
    """``plaintext`` sealed under ``key``, bound to ``bound`` (the caller's header)."""
    size = padded_size(len(plaintext))
    body = struct.pack(">I", len(plaintext)) + plaintext
    body += bytes(size - len(body))
    enc_key, mac_key = key._keys()
    nonce = os.urandom(12)
    head = _HEAD.pack(MAGIC, key.epoch, nonce)
    ciphertext = AESGCM(enc_key).encrypt(nonce, body, head + bound)
    return head + ciphertext + hmac.new(mac_key, bound + head + ciphertext, hashlib.sha256).digest()


def epoch_of(sealed: bytes) -> int:
    if len(sealed) < _HEAD.size + _TAG_BYTES + _MAC_BYTES or sealed[:4] != MAGIC:
        raise GroupSealError("not a sealed group blob")
    return int(_HEAD.unpack_from(sealed)[1])


def open_sealed(keys: Mapping[int, GroupKey], bound: bytes, sealed: bytes) -> bytes:
    """The plaintext of ``sealed``, if a key of its epoch is held and nothing was changed: the MAC is
    checked before the cipher runs."""
    epoch = epoch_of(sealed)
    key = keys.get(epoch)
    if key is None:
        raise GroupSealError(f"sealed under epoch {epoch}, whose key this device does not hold")
    enc_key, mac_key = key._keys()
    head, ciphertext, mac = sealed[: _HEAD.size], sealed[_HEAD.size : -_MAC_BYTES], sealed[-_MAC_BYTES:]
    if not hmac.compare_digest(mac, hmac.new(mac_key, bound + head + ciphertext, hashlib.sha256).digest()):
        raise GroupSealError("the blob's MAC does not match: changed on the way, or not for this group")
    if len(ciphertext) - _TAG_BYTES not in BUCKETS:
        raise GroupSealError("a sealed blob of no padded size")
    nonce = _HEAD.unpack_from(sealed)[2]
    body = AESGCM(enc_key).decrypt(nonce, ciphertext, head + bound)  # the MAC held: the tag holds too
    (length,) = struct.unpack_from(">I", body)
    if length > len(body) - 4:
        raise GroupSealError("a sealed blob whose length is past its padding")
    return body[4 : 4 + length]
