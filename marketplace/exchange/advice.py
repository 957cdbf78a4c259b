"""What a person can do about a deal in each state (pure): shown beside every purchase and sale in
``wallet``, ``skills purchases`` and the dashboard, so that a deal that waits, or is stuck, says
why and what comes next."""

from __future__ import annotations

from marketplace.exchange.deals import PurchaseState, SaleState

_P, _S = PurchaseState, SaleState

_PURCHASES: dict[PurchaseState, str] = {
    _P.QUOTED: "quoted; nothing paid yet: the node locks the payment or lets the quote lapse",
    _P.PENDING: "the lock was sent and its receipt has not come: the node asks the chain every round",
    _P.LOCKED: "paid into the escrow, waiting for the delivery: the node asks the seller every round, reads "
    "a delivery the seller commits on chain, and takes the money back after the deadline if nothing comes",
    _P.AUTHORIZED: "paid directly, waiting for the delivery: the node asks the seller again every round",
    _P.REFUSED: "the delivery was not the listed skill: refunded after the deadline, or disputed if the seller "
    "commits it on chain (the node does both)",
    _P.DISPUTED: "disputed: the seller must answer on chain, the arbiter then decides from the chain; an "
    "unanswered dispute is refunded after the arbitration window. Nothing to do",
    _P.COMPLETED: "received as listed",
    _P.REFUNDED: "the money came back",
    _P.LOST: "the money went to the seller without the listed skill (see the detail); it counts against the "
    "seller's trust. Run the node at least once an hour while a purchase is open to contest in time",
    _P.EXPIRED: "the quote lapsed before anything was paid",
    _P.FAILED: "the payment was not made",
    _P.STALE: "an earlier release left it against an earlier escrow: settle it with that release",
}

_SALES: dict[SaleState, str] = {
    _S.QUOTED: "quoted; waiting for the buyer's payment",
    _S.DELIVERED: "delivered; the buyer has not released yet: the node commits the delivery on chain within a "
    "minute (or before the deadline), then claims after the dispute window",
    _S.COMMITTED: "committed on chain: the node claims the payment once the dispute window (1 h) has passed",
    _S.DISPUTED: "disputed: the node answered with its one-time secret; the arbiter decides from the chain, "
    "or the node claims after the arbitration window",
    _S.PAID: "paid (owed by the escrow until withdrawn: `wallet withdraw`)",
    _S.REFUNDED: "the buyer got its money back (nothing delivered in time, or the arbiter so decided)",
    _S.DEFAULTED: "the buyer took its money back after the delivery: this node no longer sells to it. Keep the "
    "node running while deliveries are open so it commits in time",
    _S.LAPSED: "never paid",
    _S.STALE: "an earlier release left it against an earlier escrow: settle it with that release",
}

STUCK = (
    "its last step failed ({why}); the node tries again every round. If the chain cannot be reached, "
    "`bitterbot-node doctor` checks [chain] url"
)


def purchase_advice(state: PurchaseState, stuck: str | None = None) -> str:
    return STUCK.format(why=stuck) if stuck else _PURCHASES[state]


def sale_advice(state: SaleState, stuck: str | None = None) -> str:
    return STUCK.format(why=stuck) if stuck else _SALES[state]
