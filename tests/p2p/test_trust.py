"""EigenTrust against hand-computed values; local trust; levels; penalties and bans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p2p.penalties import PenaltyBox, PenaltySettings
from p2p.trust import Outcomes, TrustBook, TrustLevel, eigentrust, local_trust

A, B, C, M = (bytes([i]) * 32 for i in (1, 2, 3, 9))


def test_local_trust_saturates_and_failures_weigh_more() -> None:
    assert local_trust(Outcomes()) == 0.0
    assert local_trust(Outcomes(valid=10)) == 0.5
    assert local_trust(Outcomes(valid=10, invalid=2)) == 0.0  # 10 - 10 points
    assert local_trust(Outcomes(purchases_ok=3)) == pytest.approx(30 / 40)


def test_a_buyer_that_took_a_delivered_skill_back_is_untrusted_and_an_old_book_still_loads(tmp_path: Path) -> None:
    book = TrustBook(me=A, management=frozenset({M}))
    book.record(B, valid=15)  # 15 points of good gossip ...
    book.set_defaults(B, 1)  # ... outweighed by one default (-20)
    assert local_trust(book.outcomes[B]) == 0.0
    assert book.compute()[B].level is TrustLevel.UNTRUSTED
    path = tmp_path / "trust.json"
    saved_before_defaults_existed = {"outcomes": {C.hex(): {"valid": 3}}, "attestations": {}}
    path.write_text(json.dumps(saved_before_defaults_existed))
    assert TrustBook.load(path, A, frozenset({M})).outcomes[C] == Outcomes(valid=3, defaults=0)


def test_eigentrust_two_nodes_by_hand() -> None:
    # M (pre-trusted) trusts A fully; A trusts M fully. C = [[0,1],[1,0]], p = (1, 0) over (A, M) sorted.
    # t = 0.85 C^T t + 0.15 p, fixed point: t_A = 0.85 t_M, t_M = 0.85 t_A + 0.15 -> t_M = 0.15 / (1 - 0.7225).
    result = eigentrust({M: {A: 1.0}, A: {M: 1.0}}, [M])
    t_m = 0.15 / (1 - 0.85**2)
    assert result.converged
    assert result.scores[M] == pytest.approx(t_m, abs=1e-5)
    assert result.scores[A] == pytest.approx(0.85 * t_m, abs=1e-5)
    assert sum(result.scores.values()) == pytest.approx(1.0)


def test_eigentrust_ignores_a_clique_that_only_trusts_itself() -> None:
    # B and C vouch for each other; nobody trusted vouches for them.
    local = {M: {A: 1.0}, A: {M: 0.5}, B: {C: 1.0}, C: {B: 1.0}}
    scores = eigentrust(local, [M]).scores
    assert scores[A] > 0.3 and scores[B] < 1e-6 and scores[C] < 1e-6


def test_eigentrust_bounded_rounds() -> None:
    chain = {bytes([i]) * 32: {bytes([i + 1]) * 32: 1.0} for i in range(7)}
    result = eigentrust(chain, [bytes([0]) * 32], max_rounds=3)
    assert result.rounds == 3 and not result.converged
    assert eigentrust({}, []).scores == {}


def test_levels_from_evidence_and_management(tmp_path: Path) -> None:
    book = TrustBook(me=A, management=frozenset({M}))
    book.record(B, valid=40, executions_ok=4)
    book.record(C, invalid=3)
    book.attest(M, [(B, 900)])
    levels = {peer: t.level for peer, t in book.compute().items()}
    assert levels[M] is TrustLevel.VERIFIED
    assert levels[B] is TrustLevel.VERIFIED  # rated 0.9 by a management key
    assert levels[C] is TrustLevel.UNTRUSTED
    book.attest(M, [])
    assert book.compute()[B].level is TrustLevel.TRUSTED
    path = tmp_path / "trust.json"
    book.save(path)
    again = TrustBook.load(path, A, frozenset({M}))
    assert again.outcomes == book.outcomes and again.attestations == book.attestations
    path.write_text("{broken")
    with pytest.raises(ValueError, match="unreadable trust book"):
        TrustBook.load(path, A, frozenset({M}))


def test_penalties_decay_and_ban_then_expire() -> None:
    box = PenaltyBox(PenaltySettings(threshold=100, half_life_ms=60_000, ban_ms=600_000))
    assert not box.penalize("p", 60, 0)
    assert box.points("p", 60_000) == pytest.approx(30)
    assert not box.penalize("p", 60, 60_000)  # 30 + 60 = 90
    assert box.penalize("p", 25, 60_000)  # 115: banned
    assert box.is_banned("p", 600_000) and not box.penalize("p", 50, 600_000)
    assert box.expired_bans(600_000) == []
    assert box.expired_bans(660_000) == ["p"] and not box.is_banned("p", 660_000)
    assert box.points("p", 660_000) == 0.0
