"""A wallet's word that it stands behind a node key: an EIP-191 signature by the wallet's key over
the node key, sent with a quote request (pure; coincurve, as ``chain_types.address_of_key``).

A quote request is signed by the buyer's node key, which costs nothing to make; the wallet address
it names was only claimed. With this proof the seller knows the request's node key speaks for that
wallet: the wallet's standing (it paid here before) and its funds count for the request, and a
claim without the proof gets neither.
"""

from __future__ import annotations

_DOMAIN = b"bitterbot market: this wallet buys for node key "
PROOF_BYTES = 65


def _digest(node_key: bytes) -> bytes:
    from eth_hash.auto import keccak

    message = _DOMAIN + node_key.hex().encode("ascii")
    return bytes(keccak(b"\x19Ethereum Signed Message:\n" + str(len(message)).encode("ascii") + message))


def wallet_proof(private_key: bytes, node_key: bytes) -> bytes:
    """The wallet's signature (r ‖ s ‖ v, 65 bytes) that it buys for ``node_key``."""
    from coincurve import PrivateKey

    signature = PrivateKey(private_key).sign_recoverable(_digest(node_key), hasher=None)
    return signature[:64] + bytes([signature[64] + 27])


def proven_wallet(proof: bytes | None, node_key: bytes, address: str) -> bool:
    """Whether ``proof`` is ``address``'s signature that it buys for ``node_key``; a missing or
    malformed proof is simply no proof."""
    if proof is None or len(proof) != PROOF_BYTES or proof[64] not in (27, 28):
        return False
    from coincurve import PublicKey
    from eth_hash.auto import keccak

    try:
        public = PublicKey.from_signature_and_message(proof[:64] + bytes([proof[64] - 27]), _digest(node_key),
                                                      hasher=None)  # fmt: skip
    except ValueError:
        return False
    signer = keccak(public.format(compressed=False)[1:])[-20:].hex()
    return "0x" + signer == address.lower()
