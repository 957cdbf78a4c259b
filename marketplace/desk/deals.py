"""This node's latest purchases and sales as a person reads them: what each was for, where it
stands, what comes next (or why it is stuck), and where a bought skill went."""

from __future__ import annotations

from typing import Any

from marketplace.catalog.listings import listed_title
from marketplace.exchange.advice import purchase_advice, sale_advice
from marketplace.exchange.deals import Purchases, Sales
from marketplace.exchange.protocol import readable_quote
from memory.errors import CrystalNotFound
from memory.governance.quarantine import hold_of, review_note
from memory.storage.store import MemoryStore


async def recent_deals(
    store: MemoryStore, limit: int, stuck: dict[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The latest ``limit`` purchases and sales, each with what comes next; ``stuck``: the market's
    stuck deals by purchase id (``Market.stuck``)."""
    purchases = [
        {"purchase_id": r.purchase_id.hex(), "state": str(r.state), "detail": r.detail,
         "skill": await skill_named(store, r.crystal_id, r.seller.hex(), r.quote),
         "crystal_id": r.crystal_id, "updated_ms": r.updated_ms, "stuck": stuck.get(r.purchase_id.hex()),
         "advice": purchase_advice(r.state, stuck.get(r.purchase_id.hex())),
         "held": review_note(await hold_of(store, r.crystal_id)) if r.crystal_id else None}
        for r in await Purchases(store).recent(limit)
    ]  # fmt: skip
    sales = [
        {"purchase_id": r.purchase_id.hex(), "state": str(r.state), "crystal_id": r.crystal_id,
         "skill": await skill_named(store, r.crystal_id, None, r.quote),
         "buyer": r.buyer.hex(), "updated_ms": r.updated_ms, "stuck": stuck.get(r.purchase_id.hex()),
         "advice": sale_advice(r.state, stuck.get(r.purchase_id.hex()))}
        for r in await Sales(store).recent(limit)
    ]  # fmt: skip
    return purchases, sales


async def skill_named(store: MemoryStore, crystal_id: str | None, seller: str | None, quote: bytes) -> str:
    """What a deal was for, for a person: the skill's first line once it is here, else the title
    its seller listed it under, else its id from the quote (a purchase read "completed" alone)."""
    if crystal_id is not None:
        try:
            first = (await store.get(crystal_id, include_archived=True)).text.strip().splitlines()[0]
            return first[:80] + ("…" if len(first) > 80 else "")
        except CrystalNotFound:
            pass  # forgotten since: the listing still names it
    terms = readable_quote(quote)
    if terms is None:
        return "a skill (the quote is in an earlier release's form)"
    title = await listed_title(store, seller, terms.stable_skill_id) if seller is not None else None
    return title or terms.stable_skill_id
