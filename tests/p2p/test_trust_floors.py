"""Issue 27, finding 4: trust was cheap, and trust released held content. Global trust is relative
to the best peer that is not an anchor, so one recorded execution (even of a skill still held), or
one minimum purchase, made a fresh key ``trusted`` wherever it was the best-rated peer."""

from __future__ import annotations

from p2p.trust.book import TrustBook, TrustLevel
from p2p.trust.floors import Evidence, TrustFloors

ME, FRESH = b"a" * 32, b"f" * 32


def level_with(**outcomes: int) -> tuple[TrustBook, TrustLevel]:
    book = TrustBook(me=ME, management=frozenset())  # the node's floors (the defaults)
    book.record(FRESH, **outcomes)
    return book, book.compute()[FRESH].level


def test_one_execution_or_one_small_purchase_no_longer_makes_a_fresh_key_trusted() -> None:
    for outcomes in ({"executions_ok": 1}, {"purchases_ok": 1}, {"executions_ok": 40, "purchases_ok": 9}):
        book, level = level_with(**outcomes)
        assert book.last.peers[FRESH].combined >= 0.6  # the score alone would have made it trusted
        assert level is TrustLevel.PROVISIONAL, outcomes


def test_evidence_over_days_of_released_runs_or_real_money_makes_it_trusted() -> None:
    floors = TrustFloors()
    runs = Evidence(frozenset({1, 2, 3}), executions_ok=3)
    paid = Evidence(frozenset({1, 5, 9}), paid_micro_usdc=1_000_000)
    assert runs.meets(floors) and paid.meets(floors)
    assert not Evidence(frozenset({1, 2}), executions_ok=50).meets(floors)  # one burst of two days
    assert not Evidence(frozenset({1, 2, 3}), executions_ok=2, paid_micro_usdc=999_999).meets(floors)
    for evidence in (runs, paid):
        book = TrustBook(me=ME, management=frozenset())
        book.record(FRESH, executions_ok=3)
        book.set_evidence({FRESH: evidence})
        assert book.compute()[FRESH].level is TrustLevel.TRUSTED
