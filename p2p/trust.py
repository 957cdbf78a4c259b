"""Peer trust: local evidence, EigenTrust over signed attestations, and the resulting levels.

Local trust of a peer comes from what this node saw it do:

    s = valid + 5 * executions_ok + 10 * purchases_ok - 5 * invalid - 5 * executions_failed - 20 * purchases_failed
        - 20 * defaults (sales this node made to the peer that it took back after delivery)
    local = max(0, s) / (max(0, s) + 10)                    in [0, 1): saturating, 10 points is 0.5

Each node gossips its local trust vector as a signed attestation. EigenTrust
combines them: ``t = (1 - a) C^T t + a p`` with ``C`` the row-normalised local trust
of every attesting node, ``p`` uniform over the pre-trusted set, a = 0.15, iterated
to an L1 change below 1e-6 or 100 rounds. The pre-trusted set is the management
keys plus this node itself (personalised EigenTrust: what this node has seen
counts as one seed among the anchors, so trust can flow from it to the peers it
vouches for). ``global`` is ``t`` relative to the most trusted peer.

    combined = 0.5 * local + 0.5 * global

Levels: ``verified`` for a management key or a peer a management key rates at
0.8 or more; ``trusted`` at combined >= 0.6; ``untrusted`` for a peer with evidence
against it whose combined score is below 0.2; ``provisional`` otherwise, which is
where every new peer starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path

import numpy as np

ALPHA = 0.15
EPSILON = 1e-6
MAX_ROUNDS = 100  # enough for 0.85^n to reach 1e-7 even on a periodic graph
TRUSTED_AT = 0.6
UNTRUSTED_BELOW = 0.2
VERIFIED_RATING_MILLI = 800


class TrustLevel(StrEnum):
    UNTRUSTED = "untrusted"
    PROVISIONAL = "provisional"
    TRUSTED = "trusted"
    VERIFIED = "verified"


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
        good = self.valid + 5 * self.executions_ok + 10 * self.purchases_ok
        bad = 5 * self.invalid + 5 * self.executions_failed + 20 * self.purchases_failed + 20 * self.defaults
        return good - bad

    def has_evidence_against(self) -> bool:
        return bool(self.invalid or self.executions_failed or self.purchases_failed or self.defaults)


def local_trust(outcomes: Outcomes) -> float:
    s = max(0, outcomes.points())
    return s / (s + 10)


@dataclass(frozen=True, slots=True)
class EigenTrustResult:
    scores: dict[bytes, float]  # sums to 1 over every peer in the graph
    rounds: int
    converged: bool


def eigentrust(
    local: Mapping[bytes, Mapping[bytes, float]],
    pretrusted: Iterable[bytes],
    *,
    alpha: float = ALPHA,
    epsilon: float = EPSILON,
    max_rounds: int = MAX_ROUNDS,
) -> EigenTrustResult:
    """Global trust from each node's local trust in others (``local[i][j]``: i's trust in j)."""
    pre = set(pretrusted)
    peers = sorted(set(local) | {j for row in local.values() for j in row} | pre)
    if not peers:
        return EigenTrustResult({}, 0, True)
    index = {peer: i for i, peer in enumerate(peers)}
    n = len(peers)
    p = np.zeros(n)
    anchors = [index[k] for k in pre]
    if anchors:
        p[anchors] = 1.0 / len(anchors)
    else:
        p[:] = 1.0 / n
    c = np.tile(p, (n, 1))  # a node that trusts no one defers to the pre-trusted set
    for i_key, row in local.items():
        weights = np.zeros(n)
        for j_key, value in row.items():
            if j_key != i_key and value > 0:
                weights[index[j_key]] = value
        total = weights.sum()
        if total > 0:
            c[index[i_key]] = weights / total
    t = p.copy()
    for rounds in range(1, max_rounds + 1):
        nxt = (1 - alpha) * (c.T @ t) + alpha * p
        change = float(np.abs(nxt - t).sum())
        t = nxt
        if change < epsilon:
            return EigenTrustResult({peer: float(t[index[peer]]) for peer in peers}, rounds, True)
    return EigenTrustResult({peer: float(t[index[peer]]) for peer in peers}, max_rounds, False)


@dataclass(frozen=True, slots=True)
class PeerTrust:
    local: float
    global_: float
    combined: float
    level: TrustLevel


@dataclass
class TrustBook:
    """Everything this node knows about peers' trustworthiness; saved as JSON."""

    me: bytes
    management: frozenset[bytes]
    outcomes: dict[bytes, Outcomes] = field(default_factory=dict)
    attestations: dict[bytes, dict[bytes, int]] = field(default_factory=dict)  # attester -> peer -> milli

    def record(self, peer: bytes, **deltas: int) -> None:
        """Add observed outcomes, e.g. ``record(key, valid=1)``."""
        outcomes = self.outcomes.setdefault(peer, Outcomes())
        for name, delta in deltas.items():
            setattr(outcomes, name, getattr(outcomes, name) + delta)

    def set_executions(self, peer: bytes, ok: int, failed: int) -> None:
        """How the skills ``peer`` published performed when the local agent ran them (totals, not deltas:
        the executions table is the record; this is recomputed from it)."""
        outcomes = self.outcomes.setdefault(peer, Outcomes())
        outcomes.executions_ok, outcomes.executions_failed = ok, failed

    def set_purchases(self, peer: bytes, ok: int, failed: int) -> None:
        """How purchases from ``peer`` as seller ended (totals, recomputed from the purchases table)."""
        outcomes = self.outcomes.setdefault(peer, Outcomes())
        outcomes.purchases_ok, outcomes.purchases_failed = ok, failed

    def set_defaults(self, peer: bytes, count: int) -> None:
        """Sales ``peer`` defaulted on as a buyer (a total, recomputed from the sales table)."""
        self.outcomes.setdefault(peer, Outcomes()).defaults = count

    def attest(self, attester: bytes, ratings: Iterable[tuple[bytes, int]]) -> None:
        self.attestations[attester] = {peer: milli for peer, milli in ratings if peer != attester}

    def my_ratings(self) -> list[tuple[bytes, int]]:
        """This node's attestation: local trust in thousandths, strongest first, at most 256."""
        rated = [(peer, round(1000 * local_trust(o))) for peer, o in self.outcomes.items() if peer != self.me]
        rated.sort(key=lambda item: (-item[1], item[0]))
        return rated[:256]

    def compute(self) -> dict[bytes, PeerTrust]:
        graph: dict[bytes, dict[bytes, float]] = {
            a: {p: m / 1000 for p, m in r.items()} for a, r in self.attestations.items()
        }
        graph[self.me] = {peer: milli / 1000 for peer, milli in self.my_ratings()}
        result = eigentrust(graph, self.management | {self.me})
        top = max(result.scores.values(), default=0.0) or 1.0
        peers = set(result.scores) | set(self.outcomes)
        out: dict[bytes, PeerTrust] = {}
        for peer in peers:
            if peer == self.me:
                continue
            outcomes = self.outcomes.get(peer, Outcomes())
            local = local_trust(outcomes)
            global_ = result.scores.get(peer, 0.0) / top
            combined = 0.5 * local + 0.5 * global_
            out[peer] = PeerTrust(
                round(local, 4), round(global_, 4), round(combined, 4), self._level(peer, outcomes, combined)
            )
        return out

    def _level(self, peer: bytes, outcomes: Outcomes, combined: float) -> TrustLevel:
        if peer in self.management:
            return TrustLevel.VERIFIED
        if any(self.attestations.get(m, {}).get(peer, 0) >= VERIFIED_RATING_MILLI for m in self.management):
            return TrustLevel.VERIFIED
        if combined >= TRUSTED_AT:
            return TrustLevel.TRUSTED
        if outcomes.has_evidence_against() and combined < UNTRUSTED_BELOW:
            return TrustLevel.UNTRUSTED
        return TrustLevel.PROVISIONAL

    # --- persistence -------------------------------------------------------------------

    def save(self, path: Path) -> None:
        doc = {
            "outcomes": {k.hex(): asdict(o) for k, o in self.outcomes.items()},
            "attestations": {a.hex(): {p.hex(): m for p, m in r.items()} for a, r in self.attestations.items()},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(doc, sort_keys=True))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path, me: bytes, management: frozenset[bytes]) -> TrustBook:
        """The saved book, or an empty one if there is none; ``ValueError`` if the file is damaged."""
        book = cls(me, management)
        try:
            doc = json.loads(path.read_text())
        except FileNotFoundError:
            return book
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: unreadable trust book ({exc})") from exc
        try:
            book.outcomes = {bytes.fromhex(k): Outcomes(**v) for k, v in doc["outcomes"].items()}
            book.attestations = {
                bytes.fromhex(a): {bytes.fromhex(p): int(m) for p, m in r.items()}
                for a, r in doc["attestations"].items()
            }
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{path}: damaged trust book ({exc})") from exc
        return book
