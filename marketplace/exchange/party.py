"""What either side of a deal acts with: this node's keys, wallet, store, chain, its signed
messages and the clock (injected, so tests can move time)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from crypto.identity import Identity
from ground.clock import Clock
from marketplace.chain import Chain
from marketplace.chain_types import Account, DealState, DealStatus, DealTerms
from marketplace.errors import ChainError, MarketError
from marketplace.escrow import Escrow
from marketplace.exchange.messenger import Messenger
from marketplace.limits import DeadlineBounds
from memory.intake.store import IntakeStore

#: Whether a peer's node key has standing with this node (its trust here: ``trusted`` or above).
Standing = Callable[[bytes], bool]


def no_standing(_key: bytes) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Party:
    identity: Identity
    wallet: Account
    store: IntakeStore
    chain: Chain
    messenger: Messenger
    clock: Clock
    bounds: DeadlineBounds = field(default_factory=DeadlineBounds)
    #: The standing of a peer here: a seller serves buyers with standing first; a bought skill from
    #: a seller without it is held for the person, like gossip.
    standing: Standing = no_standing

    @property
    def escrow(self) -> Escrow:
        return Escrow(self.chain)


#: The escrow states that end a deal: a record moves on them only once they are confirmed.
FINAL_STATES = frozenset({DealState.RELEASED, DealState.REFUNDED})


async def final_unconfirmed(chain: Chain, escrow: Escrow, terms: DealTerms, status: DealStatus) -> bool:
    """Whether ``status`` ends the deal but lies less than ``Chain.confirmations`` deep: a reorg could
    still undo it (the deal locked again), so no record moves on it this round (on a dev chain,
    which never reorgs, never)."""
    if status.state not in FINAL_STATES or not chain.confirmations:
        return False
    return (await escrow.status(terms, confirmed=True)).state is not status.state


async def lock_unconfirmed(chain: Chain, escrow: Escrow, terms: DealTerms) -> bool:
    """Whether the lock on ``terms`` lies less than ``Chain.confirmations`` deep: a reorg could still
    undo it, and a skill delivered against it would be out with the money back (dev chain: never)."""
    return bool(chain.confirmations) and (await escrow.status(terms, confirmed=True)).state is not DealState.LOCKED


#: What one deal's settlement step may fail with; it is recorded on that deal, and stops no other.
SETTLEMENT_ERRORS = (ChainError, MarketError, ConnectionError, TimeoutError)


@dataclass
class StuckDeals:
    """Why each deal whose last settlement step failed is stuck (``wallet`` shows them), and a
    round's counts by new state."""

    reasons: dict[bytes, str] = field(default_factory=dict)

    def note(
        self, changed: dict[str, int], purchase_id: bytes, old: str, new: str | None, error: Exception | None = None
    ) -> None:
        if error is not None:
            self.reasons[purchase_id] = f"{type(error).__name__}: {error}"
            changed["failed"] = changed.get("failed", 0) + 1
            return
        self.reasons.pop(purchase_id, None)
        if new is not None and new != old:
            key = str(new)  # the state's name, not the enum: "{<SaleState.PAID: 'paid'>: 1}" reached the log
            changed[key] = changed.get(key, 0) + 1
