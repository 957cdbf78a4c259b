"""Reputation both ways: this node's as the network sees it, for pricing (the mean rating that
other nodes' signed attestations give it, in thousandths; 500, neutral, when nobody has rated it),
and each peer's as this node's own market records show it, for its local trust."""

from __future__ import annotations

from pathlib import Path

from marketplace.exchange.ledger import paid_by_seller, purchase_outcomes_by_seller, sale_defaults_by_buyer
from marketplace.executions import executions_by_source, good_run_days_by_source
from memory.storage.store import MemoryStore
from p2p.trust.book import TrustBook
from p2p.trust.floors import Evidence

NEUTRAL_MILLI = 500


def own_reputation_milli(trust_file: Path, me: bytes) -> int:
    try:
        book = TrustBook.load(trust_file, me, frozenset())
    except ValueError:
        return NEUTRAL_MILLI  # a damaged book is the daemon's to report; pricing stays neutral
    return reputation_in(book)


def reputation_in(book: TrustBook) -> int:
    me = book.me
    ratings = [r[me] for attester, r in book.attestations.items() if attester != me and me in r]
    return round(sum(ratings) / len(ratings)) if ratings else NEUTRAL_MILLI


async def fold_in_evidence(book: TrustBook, store: MemoryStore) -> None:
    """What this node's own records say of each peer, into its local trust (``p2p.trust.keeper``):
    how its skills ran for the local agent, how purchases from it ended, what it defaulted on as a
    buyer, and the floors' evidence (days of good runs, money paid to it)."""
    for seller, (bought, failed_purchases) in (await purchase_outcomes_by_seller(store)).items():
        book.set_purchases(seller, bought, failed_purchases)
    for buyer, defaults in (await sale_defaults_by_buyer(store)).items():
        book.set_defaults(buyer, defaults)
    evidence: dict[bytes, Evidence] = {}
    for source, (ok, failed) in (await executions_by_source(store)).items():
        peer = _peer_of(source)
        if peer is not None:
            book.set_executions(peer, ok, failed)
            evidence[peer] = Evidence(executions_ok=ok)
    for source, days in (await good_run_days_by_source(store)).items():
        peer = _peer_of(source)
        if peer is not None:
            evidence[peer] = evidence.get(peer, Evidence()).merged(Evidence(days=days))
    for seller, (paid, days) in (await paid_by_seller(store)).items():
        evidence[seller] = evidence.get(seller, Evidence()).merged(Evidence(days, 0, paid))
    book.set_evidence(evidence)


def _peer_of(source: str) -> bytes | None:
    """The peer key a ``peer:<hex>`` source names, or None."""
    try:
        peer = bytes.fromhex(source.removeprefix("peer:"))
    except ValueError:
        return None
    return peer if len(peer) == 32 else None
