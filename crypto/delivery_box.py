"""A delivery sealed to one recipient with a one-time key that can later be published.

libsodium's sealed box hides its ephemeral secret, so nobody but the recipient can ever open it.
A fair exchange needs one more reader: when a buyer says a delivery does not open, the seller
publishes the one-time secret and anyone (the arbiter first) can open the very bytes it committed
and see what they hold. The box is X25519 + XSalsa20-Poly1305 (``crypto_box``) between the seller's
one-time key and the recipient's node key (its Ed25519 key as X25519); the nonce is bound to the
deal, so a box cannot be moved to another purchase.
"""

from __future__ import annotations

import nacl.exceptions
import nacl.public
import nacl.signing

from crypto.errors import SealedDataTampered

NONCE_BYTES = 24


def recipient_key(ed25519_public: bytes) -> nacl.public.PublicKey:
    """The X25519 key a node's Ed25519 public key encrypts to (``SealedDataTampered`` if it is no key)."""
    try:
        return nacl.signing.VerifyKey(ed25519_public).to_curve25519_public_key()
    except (nacl.exceptions.CryptoError, ValueError, TypeError):
        raise SealedDataTampered("the recipient is not an Ed25519 public key") from None


def ephemeral_public(secret: bytes) -> bytes:
    """The public half of a one-time secret (32 bytes)."""
    return bytes(nacl.public.PrivateKey(secret).public_key)


def seal_for(recipient_ed25519: bytes, secret: bytes, nonce: bytes, data: bytes) -> bytes:
    """``data`` sealed from the one-time ``secret`` to the recipient: the same inputs give the same
    bytes, so what a seller sent and what it commits later are one and the same."""
    box = nacl.public.Box(nacl.public.PrivateKey(secret), recipient_key(recipient_ed25519))
    return bytes(box.encrypt(data, nonce).ciphertext)


def open_with_secret(secret: bytes, recipient_ed25519: bytes, nonce: bytes, sealed: bytes) -> bytes:
    """Open a box with its one-time secret, as the arbiter does once the seller published it."""
    try:
        return bytes(
            nacl.public.Box(nacl.public.PrivateKey(secret), recipient_key(recipient_ed25519)).decrypt(sealed, nonce)
        )
    except (nacl.exceptions.CryptoError, ValueError, TypeError):
        raise SealedDataTampered("the box does not open with that secret") from None
