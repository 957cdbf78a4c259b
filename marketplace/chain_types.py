"""What the chain client speaks in: an account this node controls, a transaction's receipt, a
signed EIP-3009 transfer authorization, an escrowed deal's terms and status, the escrow's rules."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from marketplace.errors import InvalidValue


@dataclass(frozen=True, slots=True)
class Account:
    """An EVM account this node controls (its key never leaves the process)."""

    address: str
    private_key: bytes

    @classmethod
    def create(cls) -> Account:
        from coincurve import PrivateKey

        return cls.from_key(PrivateKey().secret)

    @classmethod
    def from_key(cls, private_key: bytes) -> Account:
        return cls(address_of_key(private_key), private_key)

    def __repr__(self) -> str:
        return f"Account({self.address})"


def address_of_key(private_key: bytes) -> str:
    """The EIP-55 checksummed address of a secp256k1 private key: the last 20 bytes of the keccak of
    its public key. Worked out here with coincurve and eth-hash rather than eth-account, whose import
    (eth-keyfile, py_ecc's pairing tables) cost a daemon 0.45 s of a core at every start just to
    show its wallet's address."""
    from coincurve import PrivateKey
    from eth_hash.auto import keccak

    public = PrivateKey(private_key).public_key.format(compressed=False)[1:]
    plain = keccak(public)[-20:].hex()
    nibbles = keccak(plain.encode("ascii")).hex()
    return "0x" + "".join(c.upper() if int(n, 16) >= 8 else c for c, n in zip(plain, nibbles[:40], strict=True))


@dataclass(frozen=True, slots=True)
class Receipt:
    tx_hash: str
    block: int
    gas_used: int


@dataclass(frozen=True, slots=True)
class TransferAuthorization:
    """A signed EIP-3009 ``transferWithAuthorization``: ``receiver`` may collect ``amount`` from
    ``authorizer`` once (per ``nonce``) before ``valid_before``."""

    authorizer: str
    receiver: str
    amount: int
    valid_after: int
    valid_before: int
    nonce: bytes
    v: int
    r: bytes
    s: bytes

    def to_wire(self) -> list[Any]:
        return [self.authorizer, self.receiver, self.amount, self.valid_after, self.valid_before, self.nonce,
                self.v, self.r, self.s]  # fmt: skip

    @classmethod
    def from_wire(cls, doc: Any) -> TransferAuthorization:
        if not isinstance(doc, list) or len(doc) != 9:
            raise InvalidValue("an authorization is a list of 9 fields")
        authorizer, receiver, amount, after, before, nonce, v, r, s = doc
        if not (isinstance(authorizer, str) and isinstance(receiver, str)):
            raise InvalidValue("authorization addresses must be text")
        if not all(type(x) is int and x >= 0 for x in (amount, after, before, v)):
            raise InvalidValue("authorization numbers must be non-negative integers")
        if not all(isinstance(x, bytes) and len(x) == 32 for x in (nonce, r, s)):
            raise InvalidValue("authorization nonce, r and s must be 32 bytes each")
        return cls(authorizer, receiver, amount, after, before, bytes(nonce), v, bytes(r), bytes(s))


@dataclass(frozen=True, slots=True)
class DealTerms:
    """One escrowed purchase as the escrow knows it: the chain keeps a hash of these, and every call
    on the deal passes them again. The purchase id is the buyer's own: derived from its address
    and the nonce the seller quoted, so nobody else can lock (squat) it."""

    buyer: str
    nonce: bytes  # 32 bytes, from the seller's quote
    seller: str
    amount: int  # micro-USDC
    content_hash: bytes  # 32 bytes: the listed skill's content hash
    deadline: int  # chain seconds: no delivery committed by then, the buyer may take the money back

    @property
    def purchase_id(self) -> bytes:
        return purchase_id_of(self.buyer, self.nonce)

    def as_tuple(self) -> tuple[str, bytes, str, int, bytes, int]:
        return (self.buyer, self.nonce, self.seller, self.amount, self.content_hash, self.deadline)


def purchase_id_of(buyer: str, nonce: bytes) -> bytes:
    """keccak256(abi.encode(buyer, nonce)), as the escrow computes it."""
    from eth_utils.conversions import to_bytes
    from eth_utils.crypto import keccak

    if len(nonce) != 32:
        raise InvalidValue("a purchase nonce is 32 bytes")
    return bytes(keccak(b"\0" * 12 + to_bytes(hexstr=buyer) + nonce))


class DealState(StrEnum):
    """Where a deal stands in the escrow (``contracts/Escrow.vy``)."""

    NONE = "none"  # no deal on these terms: none locked, or locked on other terms
    LOCKED = "locked"  # the price is locked; nothing committed yet
    DELIVERED = "delivered"  # the seller committed its sealed delivery: the dispute window runs
    DISPUTED = "disputed"  # the buyer contests it: the seller must answer with its one-time secret
    ANSWERED = "answered"  # the seller published its secret: the arbiter judges from the chain
    RELEASED = "released"  # paid to the seller (owed in the escrow until it withdraws)
    REFUNDED = "refunded"  # back with the buyer
    UNKNOWN = "unknown"  # a number this release does not know


#: The escrow's states, by the number it stores.
DEAL_STATES = {
    0: DealState.NONE, 1: DealState.LOCKED, 2: DealState.DELIVERED, 3: DealState.DISPUTED,
    4: DealState.RELEASED, 5: DealState.REFUNDED, 6: DealState.ANSWERED,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class DealStatus:
    state: DealState
    #: Chain seconds of the move that entered the state: the commitment (delivered), the dispute
    #: (disputed), the answer (answered). Each window counts from it.
    since: int = 0


@dataclass(frozen=True, slots=True)
class Commitment:
    """A delivery as the seller committed it on chain: the skill sealed to ``recipient`` (the
    buyer's node key) with the one-time key ``ephemeral``; ``salt`` and ``recipient`` hash to the
    terms' nonce when the seller sealed to the key the buyer locked for."""

    ephemeral: bytes
    salt: bytes
    recipient: bytes
    sealed: bytes


@dataclass(frozen=True, slots=True)
class EscrowRules:
    """What the escrow was deployed with: no deal can move outside them."""

    arbiter: str
    min_delivery_window_s: int
    max_lock_s: int
    dispute_window_s: int
    arbitration_window_s: int


@dataclass(slots=True)
class GasSpent:
    """What one account's transactions cost: how many were mined, their gas, and the wei paid for it
    (at the price each was signed with: on a fee-market chain the price moves from block to block)."""

    transactions: int = 0
    gas: int = 0
    wei: int = 0


def micro_usdc_amount(micro_usdc: int) -> int:
    """``micro_usdc`` if it is an amount (a non-negative integer of micro-USDC), else ``InvalidValue``."""
    if type(micro_usdc) is not int or micro_usdc < 0:
        raise InvalidValue(f"amounts are non-negative integer micro-USDC, got {micro_usdc!r}")
    return micro_usdc
