"""Every error the marketplace package raises.

MarketError
├── ChainError             a chain operation failed
│   ├── ChainUnreachable   the JSON-RPC chain did not answer (also a ConnectionError): try again later
│   └── TransactionReverted
│       └── InsufficientFunds
├── PurchaseError          a purchase (or a sale) could not go on; says what happened to the money
└── WalletError            the wallet file is missing, unreadable or not ours
"""

from __future__ import annotations


class MarketError(Exception):
    """Base of every error raised by ``marketplace``."""


class ChainError(MarketError):
    """A chain operation failed."""


class ChainUnreachable(ChainError, ConnectionError):
    """The JSON-RPC chain did not answer (down, wrong URL, network): try again later."""


class TransactionReverted(ChainError):
    def __init__(self, reason: str) -> None:
        super().__init__(f"transaction reverted: {reason}")
        self.reason = reason


class InsufficientFunds(TransactionReverted):
    """Not enough USDC (or allowance) for the amount."""


class PurchaseError(MarketError):
    """A purchase could not go on; the message says why and what happened to the money."""


class WalletError(MarketError):
    """The wallet file is missing, unreadable or not a wallet."""
