"""What the chain client speaks in: an account this node controls, a transaction's receipt, a
signed EIP-3009 transfer authorization, and an escrow lock as the chain reports it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Account:
    """An EVM account this node controls (its key never leaves the process)."""

    address: str
    private_key: bytes

    @classmethod
    def create(cls) -> Account:
        from eth_account import Account as EthAccount

        created = EthAccount.create()
        return cls(created.address, bytes(created.key))

    @classmethod
    def from_key(cls, private_key: bytes) -> Account:
        from eth_account import Account as EthAccount

        return cls(EthAccount.from_key(private_key).address, private_key)

    def __repr__(self) -> str:
        return f"Account({self.address})"


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
            raise ValueError("an authorization is a list of 9 fields")
        authorizer, receiver, amount, after, before, nonce, v, r, s = doc
        if not (isinstance(authorizer, str) and isinstance(receiver, str)):
            raise ValueError("authorization addresses must be text")
        if not all(type(x) is int and x >= 0 for x in (amount, after, before, v)):
            raise ValueError("authorization numbers must be non-negative integers")
        if not all(isinstance(x, bytes) and len(x) == 32 for x in (nonce, r, s)):
            raise ValueError("authorization nonce, r and s must be 32 bytes each")
        return cls(authorizer, receiver, amount, after, before, bytes(nonce), v, bytes(r), bytes(s))


@dataclass(frozen=True, slots=True)
class LockInfo:
    buyer: str
    seller: str
    amount: int
    deadline: int
    state: str  # none, locked, released, refunded


@dataclass(slots=True)
class GasSpent:
    """What one account's transactions cost: how many were mined, and their gas."""

    transactions: int = 0
    gas: int = 0
