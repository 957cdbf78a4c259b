"""Identity, signed envelopes and encryption. Depends on nothing else of ours."""

from crypto.anchors import KeyRotation, TrustAnchors, make_rotation, parse_public_key, verify_rotation
from crypto.envelope import (
    Envelope,
    EnvelopePolicy,
    decode_envelope,
    open_envelope,
    pack_body,
    seal_envelope,
    verify_signature,
)
from crypto.identity import Identity, KeyFileInfo, load_identity, read_key_file_info, save_identity
from crypto.peer_id import peer_id_from_ed25519
from crypto.windows import ReplayGuard, TimestampWindow

__all__ = [
    "Envelope",
    "EnvelopePolicy",
    "Identity",
    "KeyFileInfo",
    "KeyRotation",
    "ReplayGuard",
    "TimestampWindow",
    "TrustAnchors",
    "decode_envelope",
    "load_identity",
    "make_rotation",
    "open_envelope",
    "pack_body",
    "parse_public_key",
    "peer_id_from_ed25519",
    "read_key_file_info",
    "save_identity",
    "seal_envelope",
    "verify_rotation",
    "verify_signature",
]
