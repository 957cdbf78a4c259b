"""Whose export a file is: the node's signature over a ``memory export`` file, written as the file is
streamed out and checked before anything of it is restored.

Authority follows who vouches for the words (``ground.authority``). An export restores each crystal
with the speaker, layer, lifespan and quarantine flag it was recorded with only when this node (or a
key it trusts) vouches for the whole file; anything else is a file, with a file's authority.

The format (version 3): the header names the signer's public key (``"signer"``); every line follows
as before; the last line is ``{"kind": "signature", "algorithm": "ed25519", "signer": <hex>,
"signature": <hex>}``, an Ed25519 signature over ``DOMAIN`` and the SHA-256 of every byte before
that line. The writer never holds the file; the reader hashes it line by line. ``DOMAIN`` keeps the
signature from meaning anything in any other protocol the same key signs in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, BinaryIO, Protocol

from crypto.identity import verifies
from ground import json_text
from memory.safe_files import MAX_LINE_BYTES

DOMAIN = b"bitterbot-node/memory-export/signature/v1\x00"
KIND = "signature"
ALGORITHM = "ed25519"


class Signer(Protocol):
    """What signs an export: the node's identity (``crypto.identity.Identity``)."""

    @property
    def public_key(self) -> bytes: ...

    def sign(self, message: bytes) -> bytes: ...


class Vouched(StrEnum):
    """What the check of a file found. Only ``TRUSTED`` restores authority."""

    TRUSTED = "signed by this node"
    UNSIGNED = "not signed (written before exports were signed, or not by a node)"
    SIGNATURE_MISSING = "its header names a signer but it has no signature line (cut short?)"
    OTHER_SIGNER = "signed by a key this node does not trust (another node's export)"
    ALTERED = "its signature does not match its contents (changed after it was signed)"
    DAMAGED = "its signature line is damaged"


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    vouched: Vouched
    signer: bytes | None = None  # the key the file names, when it names one

    @property
    def trusted(self) -> bool:
        return self.vouched is Vouched.TRUSTED


class SigningHash:
    """The running hash of the lines an export writes, and the signature line that ends it."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def update(self, line: bytes) -> None:
        self._hash.update(line)

    def signature_line(self, signer: Signer) -> dict[str, Any]:
        signature = signer.sign(DOMAIN + self._hash.digest())
        return {"kind": KIND, "algorithm": ALGORITHM, "signer": signer.public_key.hex(), "signature": signature.hex()}


def is_signature(doc: object) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == KIND


def check_signature(lines: Iterable[bytes], trusted: frozenset[bytes]) -> SignatureCheck:
    """Whether the file whose raw ``lines`` these are is vouched for by one of the ``trusted`` keys.
    Untrusted input: every answer is a verdict, never an exception."""
    digest = hashlib.sha256()
    named: bytes | None = None  # the signer the header names
    first = True
    signature: dict[str, Any] | None = None
    for line in lines:
        if signature is not None:
            if line.strip():  # words after the signature are vouched for by nobody
                return SignatureCheck(Vouched.ALTERED, named)
            continue
        if first and line.strip():
            first = False
            named = _header_signer(line)
        elif b'"signature"' in line and is_signature(doc := _json(line)):
            signature = doc
            continue
        digest.update(line)
    if signature is None:
        return SignatureCheck(Vouched.SIGNATURE_MISSING if named else Vouched.UNSIGNED, named)
    key, sig = _hex(signature.get("signer"), 32), _hex(signature.get("signature"), 64)
    if key is None or sig is None or signature.get("algorithm") != ALGORITHM or key != named:
        return SignatureCheck(Vouched.DAMAGED, named)
    if not verifies(key, DOMAIN + digest.digest(), sig):
        return SignatureCheck(Vouched.ALTERED, key)
    return SignatureCheck(Vouched.TRUSTED if key in trusted else Vouched.OTHER_SIGNER, key)


def check_file(handle: BinaryIO, trusted: frozenset[bytes], max_line: int = MAX_LINE_BYTES) -> SignatureCheck:
    """``check_signature`` over an open file, read from its start; the handle is left at its start.
    A line over ``max_line`` bytes (never one an export writes) makes the file damaged, unread past."""
    handle.seek(0)
    try:
        over_cap = False

        def bounded() -> Iterator[bytes]:
            nonlocal over_cap
            while line := handle.readline(max_line + 1):
                if len(line) > max_line and not line.endswith(b"\n"):
                    over_cap = True
                    return
                yield line

        check = check_signature(bounded(), trusted)
        return SignatureCheck(Vouched.DAMAGED, check.signer) if over_cap else check
    finally:
        handle.seek(0)


def _header_signer(line: bytes) -> bytes | None:
    doc = _json(line)
    return _hex(doc.get("signer"), 32) if isinstance(doc, dict) else None


def _json(line: bytes) -> Any:
    try:
        return json_text.loads(line)
    except ValueError:
        return None


def _hex(value: object, size: int) -> bytes | None:
    if not isinstance(value, str) or len(value) != 2 * size:
        return None
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None
