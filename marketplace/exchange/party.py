"""What either side of a deal acts with: this node's keys, wallet, store, chain, its signed
messages and the clock (injected, so tests can move time)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from crypto.identity import Identity
from ground.clock import Clock
from marketplace.chain import Chain
from marketplace.chain_types import Account, DealState, DealStatus, DealTerms, EscrowRules
from marketplace.errors import ChainError, MarketError
from marketplace.escrow import Escrow
from marketplace.exchange.messenger import Messenger
from memory.intake.store import IntakeStore

MIN_DELIVERY_WINDOW_S = 300
MAX_LOCK_S = 86_400


@dataclass(frozen=True, slots=True)
class DeadlineBounds:
    """The escrow deadlines this node accepts, in seconds from the chain's now: a buyer refuses a
    quote outside them (a far deadline freezes its money that long), and the seller delivers only
    against a lock whose deadline is the one it quoted (a near one lets the buyer refund itself
    before the delivery is paid for)."""

    min_s: int = MIN_DELIVERY_WINDOW_S
    max_s: int = MAX_LOCK_S

    def outside(self, rules: EscrowRules) -> str | None:
        """Why these bounds do not lie within the escrow's own (a quote they accept would be a lock
        the escrow refuses), or None."""
        if self.min_s < rules.min_delivery_window_s or self.max_s > rules.max_lock_s:
            return (
                f"this node accepts escrow deadlines {self.min_s}-{self.max_s} s away, the escrow only "
                f"{rules.min_delivery_window_s}-{rules.max_lock_s} s: set [chain] min_delivery_window_s and "
                "max_lock_s within the escrow's"
            )
        return None

    def refusal(self, deadline_s: int, chain_now_s: int) -> str | None:
        """Why ``deadline_s`` is out of bounds, or None."""
        ahead = deadline_s - chain_now_s
        if ahead < self.min_s:
            return f"its escrow deadline is {ahead} s away, less than the {self.min_s} s this node needs"
        if ahead > self.max_s:
            return f"its escrow deadline is {ahead} s away, more than the {self.max_s} s this node locks money for"
        return None


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
    bounds: DeadlineBounds = DeadlineBounds()
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
