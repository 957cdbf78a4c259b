"""Peer trust: local evidence, EigenTrust over signed attestations, and the resulting levels.

Local trust of a peer comes from what this node saw it do:

    s = 5 * executions_ok + 10 * purchases_ok
        - 5 * invalid - 5 * executions_failed - 20 * purchases_failed
        - 20 * defaults (sales this node made to the peer that it took back after delivery)
    local = max(0, s) / (max(0, s) + 10)                    in [0, 1): saturating, 10 points is 0.5

A valid gossip message proves only that its author holds a key, and keys cost nothing,
so gossip earns no trust (``valid`` is counted for display only): trust moves with what
costs something (a skill that worked for the local agent, a purchase that ended well, a
management attestation), and is lost by what the peer did wrong.

Each node gossips its local trust vector as a signed attestation. EigenTrust
(``p2p.trust.eigentrust``) combines them: ``t = (1 - a) C^T t + a p``, a = 0.15, with ``p``
uniform over the pre-trusted set: the management keys plus this node itself
(personalised EigenTrust: what this node has seen counts as one seed among the anchors).
``global`` is ``t`` relative to the most trusted peer that is not an anchor (the anchors hold
the teleport mass, so measuring against them would make trust shrink with every honest peer
this node meets: with four equally good peers none could ever reach ``trusted``).

    combined = 0.5 * local + 0.5 * global

Levels: ``verified`` for a management key or a peer a management key rates at
0.8 or more; ``trusted`` at combined >= 0.6 *and* evidence of this node's own past the absolute
floors (``p2p.trust.floors``: several days, released skills that worked or money paid);
``untrusted`` for a peer with evidence
against it whose combined score is below 0.2; ``provisional`` otherwise, which is
where every new peer starts.

Strangers are bounded (``TrustLimits``, the ``[trust]`` config section):
- an attestation counts only from a management key or from a peer that is trusted on
  the grounds of this node's own evidence and the management keys' attestations alone
  (a first pass without third-party attestations), so a crowd of fresh keys, or a clique
  vouching for itself, moves nothing;
- at most ``max_attesters`` attestations are kept (the attester with the least standing
  makes room), each truncated to its ``max_ratings_per_attester`` strongest ratings;
- at most ``max_tracked_peers`` keys have outcomes recorded: past that, the keys with the
  least evidence, oldest first, are forgotten (evidence against a key is kept longest);
- the computation runs on a frozen ``TrustSnapshot`` (off the event loop) within a time
  budget, and its memory is linear in the ratings kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from p2p.errors import InvalidValue
from p2p.trust.eigentrust import EigenTrustResult, eigentrust
from p2p.trust.floors import Evidence, TrustFloors
from p2p.trust.limits import TrustLimits

TRUSTED_AT = 0.6
UNTRUSTED_BELOW = 0.2
VERIFIED_RATING_MILLI = 800
ATTESTATION_RATINGS = 256  # what this node's own attestation carries at most (the wire's limit)


class TrustLevel(StrEnum):
    UNTRUSTED = "untrusted"
    PROVISIONAL = "provisional"
    TRUSTED = "trusted"
    VERIFIED = "verified"


_LEVEL_ORDER = {
    TrustLevel.UNTRUSTED: 0, TrustLevel.PROVISIONAL: 1, TrustLevel.TRUSTED: 2, TrustLevel.VERIFIED: 3,
}  # fmt: skip

#: Levels whose attestations count and whose content skips quarantine.
STANDING_LEVELS = frozenset({TrustLevel.TRUSTED, TrustLevel.VERIFIED})


@dataclass(slots=True)
class Outcomes:
    valid: int = 0
    invalid: int = 0
    executions_ok: int = 0
    executions_failed: int = 0
    purchases_ok: int = 0
    purchases_failed: int = 0
    defaults: int = 0  # as a buyer: kept a delivered skill and refunded the escrow

    def points(self) -> int:
        good = 5 * self.executions_ok + 10 * self.purchases_ok
        bad = 5 * self.invalid + 5 * self.executions_failed + 20 * self.purchases_failed + 20 * self.defaults
        return good - bad

    def has_evidence_against(self) -> bool:
        return bool(self.invalid or self.executions_failed or self.purchases_failed or self.defaults)


def local_trust(outcomes: Outcomes) -> float:
    s = max(0, outcomes.points())
    return s / (s + 10)


@dataclass(frozen=True, slots=True)
class PeerTrust:
    local: float
    global_: float
    combined: float
    level: TrustLevel


@dataclass(frozen=True)
class TrustSnapshot:
    """A frozen copy of a book's inputs: what ``compute_trust`` reads, safe to hand to a thread."""

    me: bytes
    management: frozenset[bytes]
    outcomes: Mapping[bytes, Outcomes]
    attestations: Mapping[bytes, Mapping[bytes, int]]
    limits: TrustLimits
    floors: TrustFloors = field(default_factory=TrustFloors)
    evidence: Mapping[bytes, Evidence] = field(default_factory=dict)


@dataclass(frozen=True)
class TrustComputation:
    peers: dict[bytes, PeerTrust]
    attesters: frozenset[bytes]  # whose attestations counted (and may count next time)
    rounds: int
    converged: bool


def own_ratings(me: bytes, outcomes: Mapping[bytes, Outcomes]) -> list[tuple[bytes, int]]:
    """This node's attestation: local trust in thousandths, strongest first, at most 256, none at 0."""
    rated = [(peer, round(1000 * local_trust(o))) for peer, o in outcomes.items() if peer != me]
    rated = [item for item in rated if item[1] > 0]
    rated.sort(key=lambda item: (-item[1], item[0]))
    return rated[:ATTESTATION_RATINGS]


def _run(snapshot: TrustSnapshot, attesters: Iterable[bytes]) -> tuple[EigenTrustResult, dict[bytes, PeerTrust]]:
    graph: dict[bytes, dict[bytes, float]] = {
        a: {p: m / 1000 for p, m in snapshot.attestations[a].items()} for a in attesters if a in snapshot.attestations
    }
    graph[snapshot.me] = {peer: milli / 1000 for peer, milli in own_ratings(snapshot.me, snapshot.outcomes)}
    anchors = snapshot.management | {snapshot.me}
    result = eigentrust(graph, anchors, time_budget_s=snapshot.limits.eigentrust_budget_s)
    top = max((v for k, v in result.scores.items() if k not in anchors), default=0.0) or 1.0
    out: dict[bytes, PeerTrust] = {}
    for peer in set(result.scores) | set(snapshot.outcomes):
        if peer == snapshot.me:
            continue
        outcomes = snapshot.outcomes.get(peer, Outcomes())
        local = local_trust(outcomes)
        global_ = result.scores.get(peer, 0.0) / top
        combined = 0.5 * local + 0.5 * global_
        level = _level(snapshot, peer, outcomes, combined)
        out[peer] = PeerTrust(round(local, 4), round(global_, 4), round(combined, 4), level)
    return result, out


def _level(snapshot: TrustSnapshot, peer: bytes, outcomes: Outcomes, combined: float) -> TrustLevel:
    if peer in snapshot.management:
        return TrustLevel.VERIFIED
    for m in snapshot.management:
        if snapshot.attestations.get(m, {}).get(peer, 0) >= VERIFIED_RATING_MILLI:
            return TrustLevel.VERIFIED
    if combined >= TRUSTED_AT and snapshot.evidence.get(peer, Evidence()).meets(snapshot.floors):
        return TrustLevel.TRUSTED
    if outcomes.has_evidence_against() and combined < UNTRUSTED_BELOW:
        return TrustLevel.UNTRUSTED
    return TrustLevel.PROVISIONAL


def compute_trust(snapshot: TrustSnapshot) -> TrustComputation:
    """Levels and scores of every key in the graph. Pure: runs on any thread.

    First pass: this node's evidence and the management keys' attestations only; the peers
    it finds trusted (or verified) are the attesters worth hearing. Second pass: theirs too."""
    _, grounds = _run(snapshot, snapshot.management)
    heard = frozenset(
        a
        for a in snapshot.attestations
        if a in snapshot.management or (a in grounds and grounds[a].level in STANDING_LEVELS)
    )
    result, peers = _run(snapshot, heard)
    return TrustComputation(peers, heard, result.rounds, result.converged)


@dataclass
class TrustBook:
    """Everything this node knows about peers' trustworthiness (kept in the database by ``p2p.trust.records``)."""

    me: bytes
    management: frozenset[bytes]
    limits: TrustLimits = field(default_factory=TrustLimits)
    outcomes: dict[bytes, Outcomes] = field(default_factory=dict)  # oldest news first
    floors: TrustFloors = field(default_factory=TrustFloors)
    #: Good evidence of this node's own, per peer: recomputed from its records (``set_evidence``).
    evidence: dict[bytes, Evidence] = field(default_factory=dict)
    attestations: dict[bytes, dict[bytes, int]] = field(default_factory=dict)  # attester -> peer -> milli
    #: The last computation's result; ``peers`` and the validator read this, never a fresh run.
    last: TrustComputation = field(default_factory=lambda: TrustComputation({}, frozenset(), 0, True))

    def record(self, peer: bytes, **deltas: int) -> None:
        """Add observed outcomes, e.g. ``record(key, valid=1)``."""
        outcomes = self._outcomes_of(peer)
        for name, delta in deltas.items():
            setattr(outcomes, name, getattr(outcomes, name) + delta)

    def set_executions(self, peer: bytes, ok: int, failed: int) -> None:
        """How the skills ``peer`` published performed when the local agent ran them (totals, not deltas:
        the executions table is the record; this is recomputed from it)."""
        outcomes = self._outcomes_of(peer)
        outcomes.executions_ok, outcomes.executions_failed = ok, failed

    def set_purchases(self, peer: bytes, ok: int, failed: int) -> None:
        """How purchases from ``peer`` as seller ended (totals, recomputed from the purchases table)."""
        outcomes = self._outcomes_of(peer)
        outcomes.purchases_ok, outcomes.purchases_failed = ok, failed

    def set_defaults(self, peer: bytes, count: int) -> None:
        """Sales ``peer`` defaulted on as a buyer (a total, recomputed from the sales table)."""
        self._outcomes_of(peer).defaults = count

    def set_evidence(self, evidence: Mapping[bytes, Evidence]) -> None:
        """This node's own good evidence of each peer (replaces what was there: it is recomputed)."""
        self.evidence = dict(evidence)

    def standing(self, peer: bytes) -> tuple[int, float]:
        """How far ``peer`` is trusted, as of the last computation, for ordering: (level, combined score)."""
        if peer in self.management:
            return (_LEVEL_ORDER[TrustLevel.VERIFIED], 1.0)
        known = self.last.peers.get(peer)
        if known is None:
            return (_LEVEL_ORDER[TrustLevel.PROVISIONAL], 0.0)
        return (_LEVEL_ORDER[known.level], known.combined)

    def has_standing(self, peer: bytes) -> bool:
        """Whether ``peer`` is trusted or verified here (a management key always is)."""
        return self.standing(peer)[0] >= _LEVEL_ORDER[TrustLevel.TRUSTED]

    def standing_of(self, key_hex: str) -> tuple[int, float]:
        """``standing`` of a key written in hex (a quota's or a listing's); a malformed key ranks lowest."""
        try:
            return self.standing(bytes.fromhex(key_hex))
        except ValueError:
            return (-1, 0.0)

    def is_heard(self, attester: bytes) -> bool:
        """Whether an attestation by ``attester`` counts: a management key, or a peer with standing."""
        return attester in self.management or attester in self.last.attesters or self._standing(attester)

    def attest(self, attester: bytes, ratings: Iterable[tuple[bytes, int]]) -> bool:
        """Keep ``attester``'s ratings if it is heard; True when kept. Its strongest ratings are kept
        (up to the limit); when the book is full, the kept attester with the least standing makes
        room, unless the newcomer has less still."""
        if attester == self.me or not self.is_heard(attester):
            return False
        kept = sorted(((p, m) for p, m in ratings if p != attester), key=lambda item: (-item[1], item[0]))
        if attester not in self.attestations and len(self.attestations) >= self.limits.max_attesters:
            weakest = min((a for a in self.attestations if a not in self.management), key=self._rank, default=None)
            if weakest is None or self._rank(weakest) >= self._rank(attester):
                return False
            del self.attestations[weakest]
        self.attestations[attester] = dict(kept[: self.limits.max_ratings_per_attester])
        return True

    def my_ratings(self) -> list[tuple[bytes, int]]:
        return own_ratings(self.me, self.outcomes)

    def snapshot(self) -> TrustSnapshot:
        return TrustSnapshot(
            self.me,
            self.management,
            {k: replace(o) for k, o in self.outcomes.items()},
            {a: dict(r) for a, r in self.attestations.items()},
            self.limits,
            self.floors,
            dict(self.evidence),
        )

    def install(self, computation: TrustComputation) -> None:
        """Adopt a computation's result; attestations of attesters that lost their standing go."""
        self.last = computation
        for attester in [a for a in self.attestations if a not in computation.attesters and a not in self.management]:
            if not self._standing(attester):
                del self.attestations[attester]

    def compute(self) -> dict[bytes, PeerTrust]:
        """Compute on this thread and install (tests and tools; the daemon uses ``snapshot`` in a thread)."""
        self.install(compute_trust(self.snapshot()))
        return self.last.peers

    def _standing(self, peer: bytes) -> bool:
        known = self.last.peers.get(peer)
        return known is not None and known.level in STANDING_LEVELS

    def _rank(self, peer: bytes) -> float:
        known = self.last.peers.get(peer)
        return known.combined if known is not None else 0.0

    def _outcomes_of(self, peer: bytes) -> Outcomes:
        outcomes = self.outcomes.pop(peer, None)  # re-inserted last: the dict runs oldest news first
        if outcomes is None:
            outcomes = Outcomes()
            if len(self.outcomes) >= self.limits.max_tracked_peers:
                self._forget_least_known()
        self.outcomes[peer] = outcomes
        return outcomes

    def _forget_least_known(self) -> None:
        """Forget a tenth of the tracked keys: least evidence first, evidence against kept longest,
        older news before newer (a stable sort over the oldest-first dict)."""
        order = sorted(
            (k for k in self.outcomes if k not in self.management),
            key=lambda k: (self.outcomes[k].has_evidence_against(), abs(self.outcomes[k].points())),
        )
        for key in order[: max(1, self.limits.max_tracked_peers // 10)]:
            del self.outcomes[key]

    # --- persistence -------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path, me: bytes, management: frozenset[bytes], limits: TrustLimits | None = None) -> TrustBook:
        """The book an earlier release saved as JSON (trimmed to ``limits``; the database holds it now,
        ``p2p.trust.records``), or an empty one if there is none; ``ValueError`` if the file is damaged
        or larger than the limits allow."""
        limits = limits or TrustLimits()
        book = cls(me, management, limits)
        try:
            size = path.stat().st_size
            if size > limits.max_file_bytes():
                raise InvalidValue(f"{path}: trust book of {size} bytes is larger than the limits allow")
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            return book
        except (OSError, ValueError) as exc:
            raise InvalidValue(f"{path}: unreadable trust book ({exc})") from exc
        try:
            outcomes = {bytes.fromhex(k): Outcomes(**v) for k, v in doc["outcomes"].items()}
            attestations = {
                bytes.fromhex(a): {bytes.fromhex(p): int(m) for p, m in r.items()}
                for a, r in doc["attestations"].items()
            }
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidValue(f"{path}: damaged trust book ({exc})") from exc
        book.outcomes = dict(list(outcomes.items())[-limits.max_tracked_peers :])
        for attester, ratings in list(attestations.items())[-limits.max_attesters :]:
            kept = sorted(ratings.items(), key=lambda item: (-item[1], item[0]))
            book.attestations[attester] = dict(kept[: limits.max_ratings_per_attester])
        return book
