"""The node's Ed25519 identity and its key file.

Key file: UTF-8 JSON, mode 0600, written atomically. The public key is stored
in clear so `status` can show it without a passphrase; the 32-byte seed is
either in clear (``protection = "none"``) or sealed under a passphrase
(``"passphrase"``: scrypt + AES-256-GCM, see ``crypto.sealed``). A file whose
seed does not produce its public key is refused as corrupt.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass, field
from pathlib import Path

import nacl.exceptions
import nacl.public
import nacl.signing

from crypto.errors import (
    InvalidValue,
    KeyFileCorrupt,
    KeyFileMissing,
    KeyFilePermissions,
    PassphraseRequired,
    SealedDataError,
    SealedDataTampered,
    WrongPassphrase,
)
from crypto.peer_id import peer_id_from_ed25519
from crypto.private_file import write_private_atomically
from crypto.sealed import ScryptParams, SealedBlob, seal, unseal

KEY_FILE_FORMAT = "bitterbot-node/identity"
KEY_FILE_VERSION = 1


@dataclass(frozen=True)
class Identity:
    """An Ed25519 key pair. ``repr`` never shows the secret."""

    _signing_key: nacl.signing.SigningKey = field(repr=False)

    @classmethod
    def generate(cls) -> Identity:
        return cls(nacl.signing.SigningKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> Identity:
        if len(seed) != 32:
            raise InvalidValue("an Ed25519 seed has 32 bytes")
        return cls(nacl.signing.SigningKey(seed))

    @property
    def public_key(self) -> bytes:
        return bytes(self._signing_key.verify_key)

    @property
    def peer_id(self) -> str:
        return peer_id_from_ed25519(self.public_key)

    @property
    def seed(self) -> bytes:
        """The secret seed. Only the key file and the libp2p host may call this."""
        return bytes(self._signing_key)

    def sign(self, message: bytes) -> bytes:
        """A 64-byte detached Ed25519 signature."""
        return self._signing_key.sign(message).signature

    def open_sealed(self, sealed: bytes) -> bytes:
        """Decrypt a box sealed to this identity by ``seal_to`` (X25519 from the Ed25519 key)."""
        try:
            return nacl.public.SealedBox(self._signing_key.to_curve25519_private_key()).decrypt(sealed)
        except nacl.exceptions.CryptoError:
            raise SealedDataTampered("the sealed box does not open with this key") from None

    def open_box(self, ephemeral_public: bytes, nonce: bytes, sealed: bytes) -> bytes:
        """Open a delivery sealed to this identity by ``crypto.delivery_box.seal_for``."""
        try:
            sender = nacl.public.PublicKey(ephemeral_public)
            box = nacl.public.Box(self._signing_key.to_curve25519_private_key(), sender)
            return bytes(box.decrypt(sealed, nonce))
        except (nacl.exceptions.CryptoError, ValueError, TypeError):
            raise SealedDataTampered("the delivery does not open with this node's key") from None

    def __str__(self) -> str:
        return f"Identity({self.peer_id})"


def verifies(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``public_key``'s Ed25519 signature of ``message``; a key or a
    signature of the wrong shape is simply not a valid one (untrusted input never raises here)."""
    try:
        nacl.signing.VerifyKey(public_key).verify(message, signature)
    except (nacl.exceptions.BadSignatureError, nacl.exceptions.CryptoError, ValueError, TypeError):
        return False
    return True


def seal_to(public_key: bytes, data: bytes) -> bytes:
    """Encrypt ``data`` so that only the holder of the Ed25519 ``public_key`` can read it."""
    recipient = nacl.signing.VerifyKey(public_key).to_curve25519_public_key()
    return bytes(nacl.public.SealedBox(recipient).encrypt(data))


def save_identity(
    identity: Identity,
    path: Path,
    *,
    passphrase: bytes | None = None,
    scrypt_params: ScryptParams | None = None,
) -> None:
    """Write the key file atomically with mode 0600; refuses to overwrite an existing file."""
    if path.exists():
        raise FileExistsError(f"{path} already exists; refusing to overwrite an identity")
    _write_identity(identity, path, passphrase, scrypt_params)


def seal_identity_file(path: Path, passphrase: bytes, *, scrypt_params: ScryptParams | None = None) -> Identity:
    """Seal a plaintext key file in place under ``passphrase`` (atomically: a crash leaves the old
    file or the new one). A file sealed already is left as it is (``load_identity`` checks it)."""
    if read_key_file_info(path).encrypted:
        return load_identity(path, passphrase=passphrase)
    identity = load_identity(path)
    _write_identity(identity, path, passphrase, scrypt_params)
    return identity


def _write_identity(
    identity: Identity, path: Path, passphrase: bytes | None, scrypt_params: ScryptParams | None
) -> None:
    doc: dict[str, object] = {
        "format": KEY_FILE_FORMAT,
        "version": KEY_FILE_VERSION,
        "public_key": identity.public_key.hex(),
    }
    if passphrase is None:
        doc["protection"] = "none"
        doc["seed"] = identity.seed.hex()
    else:
        doc["protection"] = "passphrase"
        doc["sealed"] = seal(identity.seed, passphrase, context=identity.public_key, params=scrypt_params).to_json()
    write_private_atomically(path, json.dumps(doc, indent=2).encode() + b"\n")


@dataclass(frozen=True, slots=True)
class KeyFileInfo:
    """What can be read from a key file without its passphrase."""

    path: Path
    public_key: bytes
    encrypted: bool

    @property
    def peer_id(self) -> str:
        return peer_id_from_ed25519(self.public_key)


def read_key_file_info(path: Path) -> KeyFileInfo:
    """Check permissions and structure and return the public part; never needs the passphrase."""
    doc = _read_document(path)
    return KeyFileInfo(path, _public_key_of(path, doc), doc["protection"] == "passphrase")


def load_identity(path: Path, *, passphrase: bytes | None = None) -> Identity:
    """Load and check the key file. Every failure is a ``KeyFileError`` that says how to fix it."""
    doc = _read_document(path)
    public_key = _public_key_of(path, doc)
    if doc["protection"] == "none":
        try:
            seed = bytes.fromhex(str(doc.get("seed", "")))
        except ValueError as exc:
            raise KeyFileCorrupt(path, "the seed is not hex") from exc
    else:
        if passphrase is None:
            raise PassphraseRequired(
                path, "the key is encrypted; give its passphrase with --passphrase-file or BITTERBOT_KEY_PASSPHRASE"
            )
        try:
            blob = SealedBlob.from_json(doc.get("sealed"))
            seed = unseal(blob, passphrase, context=public_key)
        except SealedDataTampered as exc:
            raise WrongPassphrase(path, "wrong passphrase (or the sealed key was altered)") from exc
        except SealedDataError as exc:
            raise KeyFileCorrupt(path, f"the sealed key is unreadable: {exc}") from exc
    if len(seed) != 32:
        raise KeyFileCorrupt(path, "the seed must be 32 bytes")
    identity = Identity.from_seed(seed)
    if identity.public_key != public_key:
        raise KeyFileCorrupt(path, "the secret does not match the stored public key")
    return identity


def _read_document(path: Path) -> dict[str, object]:
    try:
        st = path.stat()
    except FileNotFoundError as exc:
        raise KeyFileMissing(path, "not found; create one with `bitterbot-node init`") from exc
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileCorrupt(path, "not a regular file")
    if st.st_mode & 0o077:
        raise KeyFilePermissions(
            path, f"permissions are {stat.S_IMODE(st.st_mode):04o}; others can read it. Run: chmod 600 {path}"
        )
    try:
        doc = json.loads(path.read_bytes())
    except (UnicodeDecodeError, ValueError) as exc:
        raise KeyFileCorrupt(path, f"not valid JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != KEY_FILE_FORMAT:
        raise KeyFileCorrupt(path, f"not a {KEY_FILE_FORMAT} file")
    if doc.get("version") != KEY_FILE_VERSION:
        raise KeyFileCorrupt(path, f"unsupported key file version {doc.get('version')!r}")
    if doc.get("protection") not in ("none", "passphrase"):
        raise KeyFileCorrupt(path, f"unknown protection {doc.get('protection')!r}")
    return doc


def _public_key_of(path: Path, doc: dict[str, object]) -> bytes:
    try:
        public_key = bytes.fromhex(str(doc.get("public_key", "")))
    except ValueError as exc:
        raise KeyFileCorrupt(path, "the public key is not hex") from exc
    if len(public_key) != 32:
        raise KeyFileCorrupt(path, "the public key must be 32 bytes")
    return public_key
