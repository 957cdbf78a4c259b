"""The marketplace's settings components that configure its exchange: the escrow deadlines this
node accepts (``[chain]``), what a peer may ask of it as a seller and what a purchase may cost
(``[marketplace]``). Kept apart from the exchange's modules, which load the chain client: every
command reads the config, and ``marketplace.settings`` is made of these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from ground.settings import Section

if TYPE_CHECKING:
    from marketplace.chain_types import EscrowRules

MIN_DELIVERY_WINDOW_S = 300
MAX_LOCK_S = 86_400
DEFAULT_CEILING_MICRO_USDC = 1_000_000
DEFAULT_AGENT_DAILY_BUDGET_MICRO_USDC = 3_000_000


class DeadlineBounds(Section):
    """The ``[chain]`` keys of the escrow deadlines this node accepts, in seconds from the chain's
    now: a buyer refuses a quote outside them (a far deadline freezes its money that long), and the
    seller delivers only against a lock whose deadline is the one it quoted (a near one lets the
    buyer refund itself before the delivery is paid for)."""

    # The escrow deadlines this node accepts, as buyer (in a quote) and as seller (in a lock):
    # a deadline nearer than the minimum lets a buyer refund itself before a delivery can be
    # paid for; one further than the maximum freezes a buyer's money for as long as a seller asks.
    min_delivery_window_s: int = Field(default=MIN_DELIVERY_WINDOW_S, ge=60, le=86_400)
    """The escrow deadlines this node accepts, seconds from now: a buyer refuses a quote outside
    them, a seller refuses to deliver against a lock whose deadline is not the one it quoted.
    Nearer than the minimum, a buyer could refund itself before a delivery is paid for; further
    than the maximum, a seller that never delivers freezes the buyer's money that long.
    """
    max_lock_s: int = Field(default=MAX_LOCK_S, ge=600, le=30 * 86_400)

    def outside(self, rules: EscrowRules) -> str | None:
        """Why these bounds do not lie within the escrow's own (a quote they accept would be a lock
        the escrow refuses), or None."""
        low, high = self.min_delivery_window_s, self.max_lock_s
        if low < rules.min_delivery_window_s or high > rules.max_lock_s:
            return (
                f"this node accepts escrow deadlines {low}-{high} s away, the escrow only "
                f"{rules.min_delivery_window_s}-{rules.max_lock_s} s: set [chain] min_delivery_window_s and "
                "max_lock_s within the escrow's"
            )
        return None

    def refusal(self, deadline_s: int, chain_now_s: int) -> str | None:
        """Why ``deadline_s`` is out of bounds, or None."""
        ahead, low, high = deadline_s - chain_now_s, self.min_delivery_window_s, self.max_lock_s
        if ahead < low:
            return f"its escrow deadline is {ahead} s away, less than the {low} s this node needs"
        if ahead > high:
            return f"its escrow deadline is {ahead} s away, more than the {high} s this node locks money for"
        return None


class SellerLimits(Section):
    """The ``[marketplace]`` keys of what one peer may ask of this node as a seller: requests are
    signed by keys that cost nothing, and each quote is a row and a chain call."""

    #: Quote and delivery requests per peer, sustained, and the burst above it.
    seller_requests_per_min: float = Field(default=12.0, gt=0, le=6_000)
    """As a seller: quote and delivery requests each peer may send per minute (sustained, burst),
    checked before any signature or database work; quotes not yet expired and not delivered,
    from everyone and per buyer (each is a row and a chain call). An unpaid quote is deleted
    once its validity and two escrow windows have passed. Buyers without standing here (never
    paid this node, not trusted) share at most max_open_quotes_strangers of the open quotes.
    """
    seller_request_burst: int = Field(default=5, ge=1, le=1_000)
    #: Quotes not yet expired and not delivered, from everyone, and from one buyer.
    max_open_quotes: int = Field(default=100, ge=1, le=100_000)
    max_open_quotes_per_buyer: int = Field(default=3, ge=1, le=1_000)
    #: Of max_open_quotes, how many buyers without standing here (never paid this node, not
    #: trusted) may hold at once: fresh keys cost nothing and must not lock out known buyers.
    max_open_quotes_strangers: int = Field(default=40, ge=1, le=100_000)
    #: Strangers must prove their wallet (it signs the request) holds the price, read from the chain
    #: (a balance that covers it is kept quote_funds_cache_s); one open quote per such wallet.
    #: Strangers without the proof (an earlier release) share max_open_quotes_unproven.
    max_open_quotes_per_stranger_wallet: int = Field(default=1, ge=1, le=1_000)
    """Those strangers must prove their wallet: it signs the request, and holds the price (read from
    the chain; one that covers the price is kept quote_funds_cache_s seconds, one short of it is
    read again next time); one open quote per such wallet. A request that
    only names a wallet (an earlier release, or a flood of fresh keys) is a stranger without proof,
    and those share max_open_quotes_unproven. A past buyer's standing counts only for its proven wallet.
    """
    max_open_quotes_unproven: int = Field(default=10, ge=0, le=100_000)
    quote_funds_cache_s: float = Field(default=30.0, ge=0, le=3_600)


class SpendLimits(Section):
    """The ``[marketplace]`` keys of the purchase ceiling and the agent's daily budget, in micro-USDC."""

    # The most `skills buy` pays without --max-price (a listing may ask up to 10^12 micro-USDC);
    # only the person may pass a --max-price above it (the agent never spends past it).
    max_purchase_micro_usdc: int = Field(default=DEFAULT_CEILING_MICRO_USDC, ge=1, le=10**12)
    """The most `skills buy` pays without --max-price, checked against the listing and again against
    the seller's quote (a listing may ask up to 10^12 micro-USDC). Default: 1 USDC. Only the
    person (CLI, owner token, dashboard) may pass a --max-price above it; the agent (API token,
    MCP) never spends past it, whatever it passes.
    """
    # What the agent's purchases of the last 24 hours may add up to; the person's do not count.
    agent_daily_budget_micro_usdc: int = Field(default=DEFAULT_AGENT_DAILY_BUDGET_MICRO_USDC, ge=0, le=10**12)
    """What the agent's purchases of the last 24 hours may add up to (counted from the purchases
    recorded here, so a restart resets nothing); the person's purchases do not count and are not
    limited by it. `status` and the dashboard's market page show it. Default: 3 USDC.
    """
