"""Encrypting a large file in chunks: AES-256-GCM, each chunk its own tag, order and end bound in.

For backups, which can be hundreds of megabytes: nothing is held whole in memory. The key
comes from a passphrase (scrypt, its parameters and salt in the header) or from a 32-byte
key file. Layout::

    MAGIC | u32 header length | header (JSON) | chunks...
    chunk = u32 ciphertext length | AES-GCM(key, nonce_prefix || u32 index, plaintext, aad)
    aad   = sha256(MAGIC | header) | u32 index | u8 last

A flipped bit, a swapped, dropped or repeated chunk, a cut-off end, an edited header or a
wrong key all fail a tag: ``SealedDataTampered``. Every chunk is checked before the caller
acts on any of it only if the caller reads to the end first (``decrypt_file`` writes to a
path it is given and returns only when the whole stream verified).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from crypto.errors import SealedDataError, SealedDataTampered
from crypto.sealed import ScryptParams

MAGIC = b"BITTERBOT-STREAM-1\n"
CHUNK = 1 << 20
MAX_HEADER = 4096


@dataclass(frozen=True, slots=True)
class StreamKey:
    """Either a passphrase (scrypt-derived key) or raw key bytes from a key file."""

    passphrase: bytes | None = None
    raw: bytes | None = None

    @classmethod
    def from_key_file(cls, path: Path) -> StreamKey:
        data = path.read_bytes().strip()
        try:
            raw = bytes.fromhex(data.decode()) if len(data) == 64 else data
        except (UnicodeDecodeError, ValueError):
            raw = data
        if len(raw) != 32:
            raise SealedDataError(f"{path}: a key file holds 32 bytes (raw or 64 hex digits), not {len(raw)}")
        return cls(raw=raw)


def _derive(key: StreamKey, header: dict[str, object]) -> bytes:
    if header.get("kdf") == "raw":
        if key.raw is None:
            raise SealedDataError("this file was encrypted with a key file; give --key-file")
        return key.raw
    if key.passphrase is None:
        raise SealedDataError("this file was encrypted with a passphrase; give --passphrase-file")
    try:
        params = ScryptParams(int(header["n"]), int(header["r"]), int(header["p"]))  # type: ignore[call-overload]
        salt = bytes.fromhex(str(header["salt"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise SealedDataError(f"unreadable header ({exc})") from None
    params.validate()
    return Scrypt(salt=salt, length=32, n=params.n, r=params.r, p=params.p).derive(key.passphrase)


def encrypt_file(source: BinaryIO, out: BinaryIO, key: StreamKey, *, meta: dict[str, object] | None = None) -> None:
    header: dict[str, object] = {"cipher": "aes-256-gcm", "chunk": CHUNK, "nonce": os.urandom(8).hex(), **(meta or {})}
    if key.raw is not None:
        header["kdf"] = "raw"
    else:
        params = ScryptParams()
        header.update(kdf="scrypt", n=params.n, r=params.r, p=params.p, salt=os.urandom(16).hex())
    header_bytes = json.dumps(header, sort_keys=True).encode()
    aead = AESGCM(_derive(key, header))
    bound = hashlib.sha256(MAGIC + header_bytes).digest()
    prefix = bytes.fromhex(str(header["nonce"]))
    out.write(MAGIC + struct.pack(">I", len(header_bytes)) + header_bytes)
    index = 0
    block = source.read(CHUNK)
    while True:
        following = source.read(CHUNK) if block else b""
        last = not following
        nonce = prefix + struct.pack(">I", index)
        sealed = aead.encrypt(nonce, block, bound + struct.pack(">IB", index, last))
        out.write(struct.pack(">I", len(sealed)) + sealed)
        if last:
            return
        block, index = following, index + 1


def read_header(source: BinaryIO) -> tuple[dict[str, object], bytes]:
    magic = source.read(len(MAGIC))
    if magic != MAGIC:
        raise SealedDataError("not a bitterbot-node encrypted file (wrong magic)")
    (length,) = struct.unpack(">I", _exactly(source, 4))
    if length > MAX_HEADER:
        raise SealedDataTampered("the header is larger than any we write")
    header_bytes = _exactly(source, length)
    try:
        header = json.loads(header_bytes)  # at most MAX_HEADER bytes, so at most that deep: no stack to exhaust
    except (ValueError, RecursionError):
        raise SealedDataTampered("the header is not JSON") from None
    if not isinstance(header, dict):
        raise SealedDataTampered("the header is not an object")
    return header, header_bytes


def decrypt_file(source: BinaryIO, out: BinaryIO, key: StreamKey) -> dict[str, object]:
    """Decrypt into ``out``; raises ``SealedDataTampered`` on any damage (``out`` is then garbage)."""
    header, header_bytes = read_header(source)
    aead = AESGCM(_derive(key, header))
    bound = hashlib.sha256(MAGIC + header_bytes).digest()
    try:
        prefix = bytes.fromhex(str(header["nonce"]))
    except (KeyError, ValueError):
        raise SealedDataTampered("the header has no valid nonce") from None
    index = 0
    while True:
        size_bytes = source.read(4)
        if len(size_bytes) < 4:
            raise SealedDataTampered("the file ends before its last chunk (truncated)")
        (size,) = struct.unpack(">I", size_bytes)
        if size > CHUNK + 16:
            raise SealedDataTampered("a chunk is larger than any we write")
        sealed = _exactly(source, size)
        nonce = prefix + struct.pack(">I", index)
        for last in (False, True):
            try:
                out.write(aead.decrypt(nonce, sealed, bound + struct.pack(">IB", index, last)))
            except InvalidTag:
                continue
            break
        else:
            raise SealedDataTampered(f"chunk {index} fails its check: wrong key, or the file was altered")
        if last:
            if source.read(1):
                raise SealedDataTampered("data follows the last chunk")
            return header
        index += 1


def _exactly(source: BinaryIO, n: int) -> bytes:
    data = source.read(n)
    if len(data) != n:
        raise SealedDataTampered("the file is truncated")
    return data
