"""The libp2p peer id of an Ed25519 key, computed without libp2p.

A peer id for a key of 42 bytes or less is the identity multihash of the
protobuf-encoded public key (libp2p peer-id spec), rendered in base58btc. For
Ed25519 that is always ``12D3KooW…``. Kept here so `status` and the CLI do not
need to import the network stack, and cross-checked against py-libp2p in tests.
"""

from __future__ import annotations

from crypto.errors import InvalidValue

_B58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
# protobuf PublicKey{Type: Ed25519 (=1), Data: <32 bytes>}: field 1 varint, field 2 length-delimited
_ED25519_PROTO_PREFIX = bytes([0x08, 0x01, 0x12, 0x20])
_IDENTITY_MULTIHASH = 0x00


def b58encode(data: bytes) -> str:
    """Bitcoin-alphabet base58, with leading zero bytes kept as '1'."""
    number = int.from_bytes(data, "big")
    out = []
    while number:
        number, rem = divmod(number, 58)
        out.append(_B58_ALPHABET[rem])
    leading_zeros = len(data) - len(data.lstrip(b"\x00"))
    return "1" * leading_zeros + "".join(reversed(out))


def peer_id_from_ed25519(public_key: bytes) -> str:
    """The base58 libp2p peer id of a 32-byte Ed25519 public key."""
    if len(public_key) != 32:
        raise InvalidValue(f"an Ed25519 public key has 32 bytes, got {len(public_key)}")
    encoded = _ED25519_PROTO_PREFIX + public_key
    return b58encode(bytes([_IDENTITY_MULTIHASH, len(encoded)]) + encoded)


def b58decode(text: str) -> bytes:
    number = 0
    for char in text:
        index = _B58_ALPHABET.find(char)
        if index < 0:
            raise InvalidValue(f"not base58: {char!r}")
        number = number * 58 + index
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    leading = len(text) - len(text.lstrip("1"))
    return b"\x00" * leading + body


def ed25519_from_peer_id(peer_id: str) -> bytes | None:
    """The public key inside an Ed25519 peer id, or None for any other kind of peer id."""
    try:
        raw = b58decode(peer_id)
    except ValueError:
        return None
    prefix = bytes([_IDENTITY_MULTIHASH, 36]) + _ED25519_PROTO_PREFIX
    if len(raw) != 38 or not raw.startswith(prefix):
        return None
    return raw[len(prefix) :]
