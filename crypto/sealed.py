"""Passphrase sealing: scrypt (memory-hard KDF) + AES-256-GCM.

Used for the identity key at rest and, later, for backups. The KDF parameters
travel with the ciphertext so they can be raised without breaking old files,
and every header field is bound into the AEAD as associated data so none of
them can be swapped without the tag failing.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from crypto.errors import InvalidValue, SealedDataError, SealedDataTampered

KDF_NAME = "scrypt"
#: Bounds on what a sealed file may ask of this machine: twice the default's memory, four times its work.
MAX_SCRYPT_MEMORY = 256 * 1024 * 1024
MAX_SCRYPT_WORK = 4 * 2**17 * 8
CIPHER_NAME = "aes-256-gcm"


@dataclass(frozen=True, slots=True)
class ScryptParams:
    """Cost parameters. The default (n=2**17, r=8) costs 128 MiB and ~0.3 s, as OWASP advises."""

    n: int = 2**17
    r: int = 8
    p: int = 1

    def memory_bytes(self) -> int:
        """What deriving a key allocates: 128 x n x r bytes (the default: 128 MiB)."""
        return 128 * self.n * self.r

    def validate(self) -> None:
        # A file carries its own parameters, so a hostile one names its cost: each bound alone is not
        # enough (r=32 and n=2^20 within their ranges ask for 4 GiB), so memory and work are bounded too.
        if self.n < 2**10 or self.n > 2**20 or self.n & (self.n - 1):
            raise SealedDataError(f"scrypt n must be a power of two in [2^10, 2^20], got {self.n}")
        if not 1 <= self.r <= 32 or not 1 <= self.p <= 16:
            raise SealedDataError(f"scrypt r/p out of range: r={self.r} p={self.p}")
        if self.memory_bytes() > MAX_SCRYPT_MEMORY:
            raise SealedDataError(
                f"scrypt n={self.n}, r={self.r} would take {self.memory_bytes() >> 20} MiB; at most "
                f"{MAX_SCRYPT_MEMORY >> 20} MiB is allowed"
            )
        if self.n * self.r * self.p > MAX_SCRYPT_WORK:
            raise SealedDataError(f"scrypt n x r x p = {self.n * self.r * self.p} is more work than {MAX_SCRYPT_WORK}")


@dataclass(frozen=True, slots=True)
class SealedBlob:
    """Ciphertext plus everything needed to open it, except the passphrase."""

    params: ScryptParams
    salt: bytes
    nonce: bytes
    ciphertext: bytes

    def header(self, context: bytes) -> bytes:
        p = self.params
        return b"|".join(
            [
                b"bitterbot/sealed/v1",
                KDF_NAME.encode(),
                CIPHER_NAME.encode(),
                str(p.n).encode(),
                str(p.r).encode(),
                str(p.p).encode(),
                self.salt,
                context,
            ]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kdf": KDF_NAME,
            "n": self.params.n,
            "r": self.params.r,
            "p": self.params.p,
            "salt": _b64(self.salt),
            "cipher": CIPHER_NAME,
            "nonce": _b64(self.nonce),
            "ciphertext": _b64(self.ciphertext),
        }

    @classmethod
    def from_json(cls, data: object) -> SealedBlob:
        """Parse the JSON form; raises ``SealedDataError`` on any structural problem."""
        if not isinstance(data, dict):
            raise SealedDataError("sealed data must be an object")
        if data.get("kdf") != KDF_NAME or data.get("cipher") != CIPHER_NAME:
            raise SealedDataError(f"unsupported kdf/cipher {data.get('kdf')!r}/{data.get('cipher')!r}")
        try:
            params = ScryptParams(n=int(data["n"]), r=int(data["r"]), p=int(data["p"]))
            blob = cls(params, _unb64(data["salt"]), _unb64(data["nonce"]), _unb64(data["ciphertext"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise SealedDataError(f"sealed data is incomplete or mistyped: {exc}") from exc
        params.validate()
        if len(blob.salt) < 16 or len(blob.nonce) != 12 or len(blob.ciphertext) < 16:
            raise SealedDataError("sealed data has a short salt, nonce or ciphertext")
        return blob


def _derive_key(passphrase: bytes, salt: bytes, params: ScryptParams) -> bytes:
    params.validate()
    kdf = Scrypt(salt=salt, length=32, n=params.n, r=params.r, p=params.p)
    return kdf.derive(passphrase)


def seal(
    plaintext: bytes, passphrase: bytes, *, context: bytes = b"", params: ScryptParams | None = None
) -> SealedBlob:
    """Encrypt ``plaintext`` under ``passphrase``; ``context`` is bound but not stored."""
    params = params or ScryptParams()
    salt = os.urandom(16)
    nonce = os.urandom(12)
    key = _derive_key(passphrase, salt, params)
    draft = SealedBlob(params, salt, nonce, b"")
    ciphertext = AESGCM(key).encrypt(nonce, plaintext, draft.header(context))
    return SealedBlob(params, salt, nonce, ciphertext)


def unseal(blob: SealedBlob, passphrase: bytes, *, context: bytes = b"") -> bytes:
    """Decrypt; raises ``SealedDataTampered`` for a wrong passphrase or altered data."""
    key = _derive_key(passphrase, blob.salt, blob.params)
    try:
        return AESGCM(key).decrypt(blob.nonce, blob.ciphertext, blob.header(context))
    except InvalidTag as exc:
        raise SealedDataTampered("wrong passphrase, or the sealed data was altered") from exc


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: object) -> bytes:
    if not isinstance(text, str):
        raise InvalidValue("expected base64 text")
    return base64.b64decode(text, validate=True)
