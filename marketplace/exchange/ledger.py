"""The earnings ledger: what this node earned selling skills and spent buying them.

Read from the purchase records themselves (``sales`` as seller, ``purchases`` as buyer):
the price and skill of each come from the signed quote kept with it, so the ledger can
never disagree with what was agreed. Earned counts sales whose escrow was released to
this node; spent counts purchases completed (a refunded lock is not spent).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, TypeVar

from crypto.envelope import decode_envelope
from marketplace.catalog.listings import count_listed_by
from marketplace.exchange.deals import Purchases, PurchaseState, Sales, SaleState
from memory.storage.store import MemoryStore

_T = TypeVar("_T")

DAY_MS = 86_400_000
TREND_DAYS = 7


@dataclass(frozen=True, slots=True)
class SkillEarnings:
    stable_skill_id: str
    sales: int
    earned_micro_usdc: int


@dataclass(frozen=True, slots=True)
class DayTotals:
    day: str  # YYYY-MM-DD, UTC
    earned_micro_usdc: int
    spent_micro_usdc: int


@dataclass(frozen=True, slots=True)
class Ledger:
    earned_micro_usdc: int
    spent_micro_usdc: int
    pending_micro_usdc: int  # delivered, escrow not yet released
    sales: int
    purchases: int
    listed_skills: int
    unique_buyers: int
    top_skills: tuple[SkillEarnings, ...]
    trend: tuple[DayTotals, ...] = field(default=())  # oldest first, the last TREND_DAYS days

    def as_dict(self) -> dict[str, Any]:
        return {
            "earned_micro_usdc": self.earned_micro_usdc,
            "spent_micro_usdc": self.spent_micro_usdc,
            "pending_micro_usdc": self.pending_micro_usdc,
            "sales": self.sales,
            "purchases": self.purchases,
            "listed_skills": self.listed_skills,
            "unique_buyers": self.unique_buyers,
            "top_skills": [
                {"stable_skill_id": s.stable_skill_id, "sales": s.sales, "earned_micro_usdc": s.earned_micro_usdc}
                for s in self.top_skills
            ],
            "trend": [
                {"day": d.day, "earned_micro_usdc": d.earned_micro_usdc, "spent_micro_usdc": d.spent_micro_usdc}
                for d in self.trend
            ],
        }


def _quote_terms(quote_wire: bytes) -> tuple[str, int]:
    body = decode_envelope(bytes(quote_wire), max_bytes=1_000_000).body_map()
    return str(body["stable_skill_id"]), int(body["price_micro_usdc"])


def _day(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ms / 1000))


async def ledger(store: MemoryStore, me_hex: str | None, *, now_ms: int | None = None) -> Ledger:
    """The ledger of the node whose public key is ``me_hex`` (without it, no listed skills count)."""
    now = now_ms if now_ms is not None else store.now_ms()
    days = [_day(now - (TREND_DAYS - 1 - i) * DAY_MS) for i in range(TREND_DAYS)]
    earned_by_day: Counter[str] = Counter()
    spent_by_day: Counter[str] = Counter()
    by_skill: dict[str, list[int]] = {}
    buyers: set[str] = set()
    earned = pending = sales = 0
    for sale in await Sales(store).everything():
        skill, price = _quote_terms(sale.quote)
        if sale.state is SaleState.PAID:
            earned += price
            sales += 1
            buyers.add(sale.buyer.hex())
            earned_by_day[_day(sale.updated_ms)] += price
            entry = by_skill.setdefault(skill, [0, 0])
            entry[0] += 1
            entry[1] += price
        elif sale.state is SaleState.DELIVERED:
            pending += price
    spent = purchases = 0
    for purchase in await Purchases(store).spent():  # a direct payment refused on delivery was still spent
        _, price = _quote_terms(purchase.quote)
        spent += price
        purchases += 1
        spent_by_day[_day(purchase.updated_ms)] += price
    listed = await count_listed_by(store, me_hex)
    top = sorted(by_skill.items(), key=lambda item: (-item[1][1], -item[1][0], item[0]))[:5]
    return Ledger(
        earned_micro_usdc=earned,
        spent_micro_usdc=spent,
        pending_micro_usdc=pending,
        sales=sales,
        purchases=purchases,
        listed_skills=listed,
        unique_buyers=len(buyers),
        top_skills=tuple(SkillEarnings(skill, n, total) for skill, (n, total) in top),
        trend=tuple(DayTotals(day, earned_by_day[day], spent_by_day[day]) for day in days),
    )


async def unique_buyers(store: MemoryStore, crystal_id: str) -> int:
    """Distinct buyers who paid for ``crystal_id`` (demand in pricing)."""
    return await Sales(store).unique_buyers(crystal_id)


def _by_key(by_hex: dict[str, _T]) -> dict[bytes, _T]:
    out: dict[bytes, _T] = {}
    for key, value in by_hex.items():
        try:
            out[bytes.fromhex(key)] = value
        except ValueError:
            continue
    return out


async def sale_defaults_by_buyer(store: MemoryStore) -> dict[bytes, int]:
    """Sales each buyer defaulted on: it received the skill, never released the escrow and
    refunded itself after the deadline (the escrow allows it; the seller remembers it)."""
    return _by_key(await Sales(store).defaults_by_buyer())


async def purchase_outcomes_by_seller(store: MemoryStore) -> dict[bytes, tuple[int, int]]:
    """(completed, failed) purchases from each seller: a refused delivery or a refund after the
    deadline is a failure of the seller; a purchase still under way is neither."""
    return _by_key(await Purchases(store).outcomes_by_seller())


async def paid_by_seller(store: MemoryStore) -> dict[bytes, tuple[int, frozenset[int]]]:
    """Micro-USDC this node paid each seller for purchases that completed, and the days (ms // one
    day) they completed on: evidence of a relationship that cost something (``p2p.trust.floors``)."""
    from marketplace.exchange.protocol import readable_quote

    out: dict[bytes, tuple[int, set[int]]] = {}
    for record in await Purchases(store).in_states(PurchaseState.COMPLETED):
        quote = readable_quote(record.quote)
        if quote is None:
            continue
        paid, days = out.setdefault(record.seller, (0, set()))
        days.add(record.updated_ms // 86_400_000)
        out[record.seller] = (paid + quote.price_micro_usdc, days)
    return {seller: (paid, frozenset(days)) for seller, (paid, days) in out.items()}


def niche_line(book: Ledger) -> str | None:
    """One line for the Niche section of MEMORY.md: where this node stands in the skill market.
    It starts with "Marketplace:", so each dream replaces the previous one instead of piling up."""
    if not (book.sales or book.purchases or book.listed_skills or book.pending_micro_usdc):
        return None

    def usdc(micro: int) -> str:
        whole, frac = divmod(micro, 1_000_000)
        return f"{whole}.{frac:06d}".rstrip("0").rstrip(".") + " USDC"

    parts = [f"earned {usdc(book.earned_micro_usdc)} from {book.sales} sales to {book.unique_buyers} buyers"]
    if book.top_skills:
        parts[0] += f" (best seller: {book.top_skills[0].stable_skill_id})"
    parts.append(f"spent {usdc(book.spent_micro_usdc)} on {book.purchases} skills")
    parts.append(f"{book.listed_skills} skills listed")
    week = sum(d.earned_micro_usdc for d in book.trend)
    parts.append(f"{usdc(week)} earned in the last {TREND_DAYS} days")
    return "Marketplace: " + "; ".join(parts)
