"""The one-time code that joins a device to the person's device group (docs/design/devices.md).

The code names the inviting device (its peer id and the addresses it listens on) and holds a
128-bit secret. The joiner dials that peer id, so the libp2p handshake proves it reached the
inviter and no one in the middle; then it proves it read the code by an HMAC over both ids and a
nonce of the inviter's. The secret itself never crosses the wire. A checksum tells a mistyped
code apart from a wrong one, so a typo costs none of the code's three attempts.

    bbpair1-<base32 of: version(1) | secret(16) | peer id | addrs>-<checksum(4 base32)>

Letters and digits only (base32, upper case): what a QR code's alphanumeric mode packs best, and
what a person can read out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass

import msgpack

from crypto.errors import PairingCodeError

PREFIX = "BBPAIR1"
SECRET_BYTES = 16
#: The most a code may carry: a peer id and a few addresses (a QR code of it stays small).
MAX_ADDRS = 8
MAX_ADDR_CHARS = 200


@dataclass(frozen=True, slots=True)
class PairingCode:
    peer_id: str
    addrs: tuple[str, ...]
    secret: bytes

    @classmethod
    def new(cls, peer_id: str, addrs: tuple[str, ...]) -> PairingCode:
        return cls(peer_id, addrs[:MAX_ADDRS], os.urandom(SECRET_BYTES))

    def text(self) -> str:
        packed = msgpack.packb([1, self.secret, self.peer_id, list(self.addrs)])
        body = base64.b32encode(packed).decode().rstrip("=")
        return f"{PREFIX}-{body}-{_checksum(body)}"


def _checksum(body: str) -> str:
    return base64.b32encode(hashlib.sha256(body.encode()).digest()[:5]).decode()[:4]


def read_code(text: str) -> PairingCode:
    """The code a person typed or scanned (spaces, dashes' case and line breaks forgiven)."""
    cleaned = "".join(text.split()).upper()
    parts = cleaned.split("-")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise PairingCodeError(f"not a pairing code (it starts {PREFIX}-, as `devices pair` prints it)")
    _, body, check = parts
    if len(body) > 2_000 or _checksum(body) != check:
        raise PairingCodeError("the pairing code is mistyped or cut short (its checksum does not match)")
    try:
        version, secret, peer_id, addrs = msgpack.unpackb(base64.b32decode(body + "=" * (-len(body) % 8)))
    except (ValueError, TypeError, msgpack.UnpackException):
        raise PairingCodeError("the pairing code is damaged") from None
    valid = (
        version == 1
        and isinstance(secret, bytes) and len(secret) == SECRET_BYTES
        and isinstance(peer_id, str) and 0 < len(peer_id) <= 128
        and isinstance(addrs, list) and len(addrs) <= MAX_ADDRS
        and all(isinstance(a, str) and a.startswith("/") and len(a) <= MAX_ADDR_CHARS for a in addrs)
    )  # fmt: skip
    if not valid:
        raise PairingCodeError("the pairing code is not one this version reads")
    return PairingCode(peer_id, tuple(addrs), secret)


def proof(secret: bytes, inviter: str, joiner: str, nonce: bytes) -> bytes:
    """What the joiner sends to show it holds the code, bound to both devices and the inviter's nonce."""
    message = b"bitterbot pairing v1\x00" + inviter.encode() + b"\x00" + joiner.encode() + b"\x00" + nonce
    return hmac.new(secret, message, hashlib.sha256).digest()


def proof_holds(secret: bytes, inviter: str, joiner: str, nonce: bytes, given: bytes) -> bool:
    return hmac.compare_digest(proof(secret, inviter, joiner, nonce), given)
