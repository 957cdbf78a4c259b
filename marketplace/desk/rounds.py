"""One round of a node's market: carry unfinished purchases on (after a restart too), refund what
is due, settle sales whose escrow moved, judge answered disputes (as the arbiter), and withdraw
what the escrow owes once it reaches ``[marketplace] withdraw_at_micro_usdc``."""

from __future__ import annotations

from typing import Any

from ground.clock import Clock
from ground.events import get_logger
from marketplace.errors import ChainError, PurchaseError
from marketplace.exchange.market import Market

log = get_logger("node.market")  # the name the market's events have always had

#: What a failed round is logged for and waits out: the next round tries again.
ROUND_ERRORS = (ChainError, PurchaseError, ConnectionError, TimeoutError)


async def market_round(market: Market, *, withdraw_at: int, clock: Clock) -> dict[str, Any]:
    """Run one round and say what it did (``status`` shows it as the market's ``last_round``)."""
    resumed = await market.resume()
    settled = await market.settle_sales()
    decided = await market.arbitrate_answered()
    withdrawn = await market.withdraw(at_least=withdraw_at) if withdraw_at else 0
    if resumed or settled or withdrawn or decided:
        log.info(
            "market.round", resumed=len(resumed), arbitrated=len(decided),
            settled=", ".join(f"{state}={n}" for state, n in sorted(settled.items())), withdrawn=withdrawn,
        )  # fmt: skip
    return {
        "at_ms": clock(),
        "resumed": {r.purchase_id: r.state for r in resumed},
        "settled": settled,
        "arbitrated": [
            {"purchase_id": v.terms.purchase_id.hex(), "to": "seller" if v.to_seller else "buyer"} for v in decided
        ],
        "withdrawn_micro_usdc": withdrawn,
        "stuck": market.stuck(),
    }
