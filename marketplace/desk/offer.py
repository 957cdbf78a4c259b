"""What this node would ask for one of its skills: the price inputs gathered from the store."""

from __future__ import annotations

from marketplace.catalog.bounties import bounties_answered_by
from marketplace.catalog.listings import listings_in_category
from marketplace.exchange.ledger import unique_buyers
from marketplace.executions import ExecutionStats, execution_stats
from marketplace.pricing import PriceBreakdown, PriceInputs, PriceSettings, price
from marketplace.quality import refusals
from memory.model import Crystal
from memory.storage.store import MemoryStore


async def price_of(
    store: MemoryStore, crystal: Crystal, settings: PriceSettings, *, reputation_milli: int, me: str | None = None
) -> tuple[PriceInputs, PriceBreakdown, ExecutionStats, list[str]]:
    """(inputs, breakdown, execution stats, reasons it may not be listed) for ``crystal``."""
    stats = await execution_stats(store, crystal.id)
    category = (crystal.skill.category if crystal.skill else None) or ""
    tags = crystal.skill.tags if crystal.skill else ()
    bounties = await bounties_answered_by(
        store, text=crystal.text, tags=tags, category=category, now_ms=store.now_ms(), me=me
    )
    inputs = PriceInputs(
        executions=stats.executions,
        successes=stats.successes,
        reward_sum_milli=stats.reward_sum_milli,
        seller_reputation_milli=reputation_milli,
        category_listings_seen=await listings_in_category(store, category, excluding_seller=me),
        unique_buyers=await unique_buyers(store, crystal.id),
        bounty_matches=len(bounties),
    )
    return inputs, price(inputs, settings), stats, refusals(crystal, stats)
