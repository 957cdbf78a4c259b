"""EigenTrust against hand-computed values and the dense form; local trust; levels; what strangers
can and cannot move; limits; penalties and bans."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from p2p.penalties import PenaltyBox, PenaltySettings
from p2p.trust.book import Outcomes, TrustBook, TrustLevel, compute_trust, local_trust
from p2p.trust.eigentrust import eigentrust, eigentrust_dense
from p2p.trust.floors import NO_FLOORS
from p2p.trust.limits import TrustLimits

A, B, C, M = (bytes([i]) * 32 for i in (1, 2, 3, 9))


def test_local_trust_saturates_and_failures_weigh_more() -> None:
    assert local_trust(Outcomes()) == 0.0
    assert local_trust(Outcomes(valid=10)) == 0.0  # gossip proves a key exists, nothing more
    assert local_trust(Outcomes(executions_ok=2)) == 0.5
    assert local_trust(Outcomes(executions_ok=2, invalid=2)) == 0.0  # 10 - 10 points
    assert local_trust(Outcomes(purchases_ok=3)) == pytest.approx(30 / 40)


def test_a_buyer_that_took_a_delivered_skill_back_is_untrusted_and_an_old_book_still_loads(tmp_path: Path) -> None:
    book = TrustBook(me=A, management=frozenset({M}), floors=NO_FLOORS)
    book.record(B, valid=15, executions_ok=3)  # 18 points of good experience ...
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
    book = TrustBook(me=A, management=frozenset({M}), floors=NO_FLOORS)
    book.record(B, valid=40, executions_ok=4)
    book.record(C, invalid=3)
    book.compute()  # M is a management key: heard from the start
    book.attest(M, [(B, 900)])
    levels = {peer: t.level for peer, t in book.compute().items()}
    assert levels[M] is TrustLevel.VERIFIED
    assert levels[B] is TrustLevel.VERIFIED  # rated 0.9 by a management key
    assert levels[C] is TrustLevel.UNTRUSTED
    book.attest(M, [])
    assert book.compute()[B].level is TrustLevel.TRUSTED
    path = tmp_path / "trust.json"  # the JSON book of earlier releases (the database holds it now)
    path.write_text("{broken")
    with pytest.raises(ValueError, match="unreadable trust book"):
        TrustBook.load(path, A, frozenset({M}))


def test_penalties_decay_and_ban_then_expire() -> None:
    box = PenaltyBox(PenaltySettings(penalty_threshold=100, ban_minutes=10.0))
    assert not box.penalize("p", 60, 0)
    assert box.points("p", 60_000) == pytest.approx(30)
    assert not box.penalize("p", 60, 60_000)  # 30 + 60 = 90
    assert box.penalize("p", 25, 60_000)  # 115: banned
    assert box.is_banned("p", 600_000) and not box.penalize("p", 50, 600_000)
    assert box.expired_bans(600_000) == []
    assert box.expired_bans(660_000) == ["p"] and not box.is_banned("p", 660_000)
    assert box.points("p", 660_000) == 0.0


def _key(rng: random.Random) -> bytes:
    return rng.randbytes(32)


def test_sparse_eigentrust_equals_the_dense_form_on_random_graphs() -> None:
    rng = random.Random(7)
    for _ in range(20):
        keys = [_key(rng) for _ in range(rng.randint(2, 40))]
        local = {
            k: {rng.choice(keys): rng.random() for _ in range(rng.randint(0, 6))}
            for k in rng.sample(keys, len(keys) // 2)
        }
        pre = rng.sample(keys, rng.randint(0, 3))
        sparse, dense = eigentrust(local, pre), eigentrust_dense(local, pre)
        assert sparse.rounds == dense.rounds
        assert sparse.scores.keys() == dense.scores.keys()
        for key, value in dense.scores.items():
            assert sparse.scores[key] == pytest.approx(value, abs=1e-9)
        assert sum(sparse.scores.values()) == pytest.approx(1.0)


def test_eigentrust_stops_at_its_time_budget_with_a_valid_vector() -> None:
    ticks = iter(range(1000))
    chain = {bytes([i]) * 32: {bytes([i + 1]) * 32: 1.0} for i in range(50)}
    result = eigentrust(chain, [bytes([0]) * 32], time_budget_s=2, clock=lambda: float(next(ticks)))
    assert result.rounds == 2 and not result.converged  # one tick per round: the budget ends it
    assert sum(result.scores.values()) == pytest.approx(1.0)


def test_gossip_alone_never_makes_a_stranger_trusted() -> None:
    book = TrustBook(me=A, management=frozenset(), floors=NO_FLOORS)
    book.record(B, valid=100_000)
    assert book.compute()[B].level is TrustLevel.PROVISIONAL
    book.record(B, executions_ok=1)  # the local agent ran its skill and it worked: that is evidence
    assert book.compute()[B].level is TrustLevel.TRUSTED


def test_trust_does_not_shrink_with_the_number_of_good_peers() -> None:
    book = TrustBook(me=A, management=frozenset({M}), floors=NO_FLOORS)
    peers = [bytes([40 + i]) * 32 for i in range(20)]
    for peer in peers:
        book.record(peer, executions_ok=2)
    computed = book.compute()
    assert all(computed[p].level is TrustLevel.TRUSTED for p in peers)


def test_forty_fresh_keys_rating_256_unknown_keys_are_not_heard_and_leave_nothing() -> None:
    rng = random.Random(1)
    book = TrustBook(me=A, management=frozenset({M}), floors=NO_FLOORS)
    book.compute()
    for _ in range(40):
        attester = _key(rng)
        book.record(attester, valid=1)  # what a delivered message records
        assert not book.attest(attester, [(_key(rng), 1000) for _ in range(256)])
    assert book.attestations == {}
    peers = book.compute()
    assert len(set(peers) - {M}) == 40  # the attesters themselves (they sent valid gossip), none of the 10,240
    assert all(t.level is TrustLevel.PROVISIONAL for k, t in peers.items() if k != M)


def test_a_clique_cannot_vouch_itself_into_standing() -> None:
    # B and C each hold a stale attestation (as a poisoned old trust file would) rating the other 1000.
    book = TrustBook(me=A, management=frozenset({M}), floors=NO_FLOORS)
    book.attestations = {B: {C: 1000}, C: {B: 1000}}
    book.record(B, valid=3)
    book.record(C, valid=3)
    computed = compute_trust(book.snapshot())
    assert computed.attesters == frozenset()
    assert computed.peers[B].level is TrustLevel.PROVISIONAL and computed.peers[C].level is TrustLevel.PROVISIONAL
    book.install(computed)
    assert book.attestations == {}  # attesters without standing are dropped, not kept for later


def test_a_trusted_peer_is_heard_and_management_ratings_verify() -> None:
    book = TrustBook(me=A, management=frozenset({M}), floors=NO_FLOORS)
    book.record(B, executions_ok=4)
    book.compute()
    assert book.attest(B, [(C, 900)])
    assert book.attest(M, [(C, 850)])
    peers = book.compute()
    assert B in book.last.attesters and M in book.last.attesters
    assert peers[C].global_ > 0 and peers[C].level is TrustLevel.VERIFIED


def test_limits_bound_attesters_ratings_and_tracked_keys() -> None:
    rng = random.Random(3)
    limits = TrustLimits(max_attesters=3, max_ratings_per_attester=5, max_tracked_peers=100)
    book = TrustBook(me=A, management=frozenset({M}), limits=limits, floors=NO_FLOORS)
    strong = [_key(rng) for _ in range(4)]
    for n, peer in enumerate(strong):
        book.record(peer, executions_ok=3 + n)  # more evidence for later ones
    book.compute()
    for peer in strong[:3]:
        assert book.attest(peer, [(_key(rng), rng.randint(1, 1000)) for _ in range(50)])
    assert all(len(r) == 5 for r in book.attestations.values())  # the strongest five of each
    assert book.attest(strong[3], [(B, 500)])  # stronger than the weakest kept: takes its place
    assert strong[0] not in book.attestations and len(book.attestations) == 3
    assert book.attest(M, [(B, 500)])  # a management key always counts, and the book stays within its limit
    assert M in book.attestations and len(book.attestations) == 3

    bad = _key(rng)
    book.record(bad, invalid=2)
    for _ in range(500):
        book.record(_key(rng), valid=1)
    assert len(book.outcomes) <= 100
    assert bad in book.outcomes and all(p in book.outcomes for p in strong)  # evidence outlives chatter


def test_an_oversized_or_damaged_book_is_refused_and_a_large_one_trimmed(tmp_path: Path) -> None:
    rng = random.Random(5)
    path = tmp_path / "trust.json"
    limits = TrustLimits(max_attesters=2, max_ratings_per_attester=3, max_tracked_peers=100)
    doc = {
        "outcomes": {_key(rng).hex(): {"valid": 1} for _ in range(150)},
        "attestations": {_key(rng).hex(): {_key(rng).hex(): m for m in range(10)} for _ in range(4)},
    }
    path.write_text(json.dumps(doc))
    book = TrustBook.load(path, A, frozenset(), limits)
    assert len(book.outcomes) == 100 and len(book.attestations) == 2
    assert all(sorted(r.values()) == [7, 8, 9] for r in book.attestations.values())
    path.write_bytes(b" " * (limits.max_file_bytes() + 1))
    with pytest.raises(ValueError, match="larger than the limits allow"):
        TrustBook.load(path, A, frozenset(), limits)


def test_standing_of_a_hex_key_orders_levels_and_ranks_a_malformed_key_lowest() -> None:
    book = TrustBook(me=A, management=frozenset({M}), floors=NO_FLOORS)
    assert book.standing_of(M.hex()) > book.standing_of(B.hex()) > book.standing_of("not hex")
    assert book.standing_of("not hex") == (-1, 0.0)
