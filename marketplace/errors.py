"""Every error the marketplace package raises.

MarketError (a ``ground.errors.BitterbotError``)
├── MarketUnavailable      the market cannot serve now: no chain yet, or its chain failed to load (503)
├── ChainError             a chain operation failed
│   ├── ChainUnreachable   the JSON-RPC chain did not answer (also a ConnectionError): try again later
│   ├── TransactionPending a transaction was sent and no receipt came in time: its outcome is unknown
│   ├── GasPriceTooHigh    the chain's gas price is above [chain] max_gas_price_gwei: nothing was sent
│   └── TransactionReverted
│       └── InsufficientFunds
├── PurchaseError          a purchase (or a sale) could not go on; says what happened to the money
├── ListingNotFound        no live listing answers the name a buyer gave (also a NotFound: 404)
├── NotListable            a skill the quality gate refuses to list (400): every reason, nothing changed
├── SpendRefused           the caller may not spend this much (also ``ground.authority.NotAllowed``: 403)
└── WalletError            the wallet file is missing, unreadable or not ours
"""

from __future__ import annotations

from ground.authority import Capability, NotAllowed, Speaker
from ground.errors import BitterbotError, Invalid, NotFound, Unavailable


class MarketError(BitterbotError):
    """Base of every error raised by ``marketplace``."""


class MarketUnavailable(MarketError, Unavailable):
    """The market cannot serve now (no chain yet, or its chain failed to load): try again later."""


class ChainError(MarketError):
    """A chain operation failed."""


class ChainUnreachable(ChainError, ConnectionError):
    """The JSON-RPC chain did not answer (down, wrong URL, network): try again later."""


class TransactionPending(ChainError):
    """Sent, but no receipt within the wait: it may still be mined. Never a failure: whoever sent it
    reconciles with the chain later (by what the transaction was for, e.g. a purchase id)."""

    def __init__(self, tx_hash: str, waited_s: float) -> None:
        super().__init__(
            f"transaction {tx_hash} sent; no receipt within {waited_s:g} s, so its outcome is not known yet"
        )
        self.tx_hash = tx_hash


class GasPriceTooHigh(ChainError):
    """The chain asks more for gas than this node pays (``[chain] max_gas_price_gwei``): nothing was
    sent; the round tries again later."""

    def __init__(self, price_wei: int, cap_wei: int) -> None:
        super().__init__(
            f"the chain's gas price is {price_wei / 1e9:g} gwei, above the {cap_wei / 1e9:g} gwei this node pays "
            "([chain] max_gas_price_gwei): nothing was sent; it is tried again next round"
        )


class TransactionReverted(ChainError):
    def __init__(self, reason: str) -> None:
        super().__init__(f"transaction reverted: {reason}")
        self.reason = reason


class InsufficientFunds(TransactionReverted):
    """Not enough USDC (or allowance) for the amount."""


class PurchaseError(MarketError):
    """A purchase could not go on; the message says why and what happened to the money."""


class SpendRefused(MarketError, NotAllowed):
    """The authority table does not let the caller spend this (past the purchase ceiling, or past
    the agent's daily budget): the person may; nothing was asked of the seller or paid."""

    def __init__(self, speaker: Speaker, why: str) -> None:
        BitterbotError.__init__(self, f"{why} (nothing was paid)")
        self.speaker = speaker
        self.capability = Capability.SPEND_PAST_CEILING


class WalletError(MarketError):
    """The wallet file is missing, unreadable or not a wallet."""


class ListingNotFound(MarketError, NotFound):
    """No live listing answers the name a buyer gave (404, ahead of ``MarketError`` in the status table)."""


class InvalidValue(MarketError, Invalid):
    """A value given to ``marketplace`` is wrong (also a ValueError): the message says which and why."""


class NotListable(InvalidValue):
    """The quality gate refuses to list a skill: ``reasons`` says every way it falls short; nothing
    was changed (its scope stays as it was) and nothing was published."""

    def __init__(self, crystal_id: str, reasons: list[str]) -> None:
        super().__init__(f"{crystal_id} is not listable: " + "; ".join(reasons))
        self.reasons = tuple(reasons)


def no_gas(address: str, exc: Exception) -> InsufficientFunds | None:
    """The chain's refusal of a sender without the ether for the gas, as that, or None."""
    if "afford" in str(exc) or "insufficient funds" in str(exc).lower():
        return InsufficientFunds(f"{address} has too little ether for the gas: {exc}")
    return None


def reverted(exc: Exception) -> TransactionReverted:
    """A chain's or a contract's refusal of a transaction, with the contract's reason, typed."""
    text = str(exc)
    for marker in ("execution reverted: ", "reverted: ", "Reverted "):
        if marker in text:
            text = text.split(marker, 1)[1]
            break
    reason = text.strip().strip("'\"") or type(exc).__name__
    if "exceeds balance" in reason or "exceeds allowance" in reason or "insufficient funds" in reason.lower():
        return InsufficientFunds(reason)
    return TransactionReverted(reason)
