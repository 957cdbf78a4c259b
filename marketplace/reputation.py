"""This node's reputation as the network sees it, for pricing: the mean rating that other
nodes' signed attestations give it (thousandths; 500, neutral, when nobody has rated it)."""

from __future__ import annotations

from pathlib import Path

from p2p.trust.book import TrustBook

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
