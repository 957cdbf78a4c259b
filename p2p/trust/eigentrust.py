"""EigenTrust by sparse power iteration: time and memory linear in the number of ratings.

    t = (1 - a) (C^T t + d(t) p) + a p

``C`` holds each attester's row-normalised positive ratings of others, ``p`` is uniform
over the pre-trusted keys (uniform over everyone when there are none), and ``d(t)`` is
the trust mass sitting on keys that rate nobody (dangling rows), which defers to ``p``
just as a dense matrix row equal to ``p`` would. The product ``C^T t`` is one
``numpy.bincount`` over the edge list, so a graph of E ratings over n keys costs
O(E + n) memory and time per round, never the O(n^2) of a dense matrix: 10,000
attesters x 256 ratings is about 60 MB and well under a second per round on one core
(``bench/network/eigentrust.py`` measures it beside the dense form).

A round budget and a wall-time budget bound the work; a result that ran out of either
says so (``converged`` False) and carries the last iterate, which is already a valid
trust vector (every iterate sums to 1).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

ALPHA = 0.15
EPSILON = 1e-6
MAX_ROUNDS = 100  # enough for 0.85^n to reach 1e-7 even on a periodic graph


@dataclass(frozen=True, slots=True)
class EigenTrustResult:
    scores: dict[bytes, float]  # sums to 1 over every key in the graph
    rounds: int
    converged: bool


@dataclass(frozen=True, slots=True)
class _Graph:
    keys: list[bytes]
    sources: np.ndarray  # int32 row index of each edge
    targets: np.ndarray  # int32 column index of each edge
    weights: np.ndarray  # float64, each row's weights sum to 1
    dangling: np.ndarray  # bool per key: rates nobody
    seed: np.ndarray  # float64 per key: the pre-trusted distribution p


def _build(local: Mapping[bytes, Mapping[bytes, float]], pretrusted: set[bytes]) -> _Graph:
    keys = sorted(set(local) | {j for row in local.values() for j in row} | pretrusted)
    index = {key: i for i, key in enumerate(keys)}
    n = len(keys)
    sources: list[int] = []
    targets: list[int] = []
    weights: list[float] = []
    rates_someone = np.zeros(n, dtype=bool)
    for i_key, row in local.items():
        positive = [(index[j], float(v)) for j, v in row.items() if j != i_key and v > 0]
        total = sum(v for _, v in positive)
        if total <= 0:
            continue
        i = index[i_key]
        rates_someone[i] = True
        for j, v in positive:
            sources.append(i)
            targets.append(j)
            weights.append(v / total)
    seed = np.zeros(n)
    anchors = [index[k] for k in pretrusted]
    if anchors:
        seed[anchors] = 1.0 / len(anchors)
    elif n:
        seed[:] = 1.0 / n
    return _Graph(
        keys,
        np.asarray(sources, dtype=np.int32),
        np.asarray(targets, dtype=np.int32),
        np.asarray(weights, dtype=np.float64),
        ~rates_someone,
        seed,
    )


def eigentrust(
    local: Mapping[bytes, Mapping[bytes, float]],
    pretrusted: Iterable[bytes],
    *,
    alpha: float = ALPHA,
    epsilon: float = EPSILON,
    max_rounds: int = MAX_ROUNDS,
    time_budget_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> EigenTrustResult:
    """Global trust from each node's local trust in others (``local[i][j]``: i's trust in j).

    Stops at an L1 change below ``epsilon``, after ``max_rounds``, or once ``time_budget_s``
    has passed (checked after every round), whichever comes first."""
    graph = _build(local, set(pretrusted))
    n = len(graph.keys)
    if n == 0:
        return EigenTrustResult({}, 0, True)
    deadline = None if time_budget_s is None else clock() + time_budget_s
    p = graph.seed
    t = p.copy()
    converged = False
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        spread = np.bincount(graph.targets, weights=graph.weights * t[graph.sources], minlength=n)
        nxt = (1 - alpha) * (spread + float(t[graph.dangling].sum()) * p) + alpha * p
        change = float(np.abs(nxt - t).sum())
        t = nxt
        if change < epsilon:
            converged = True
            break
        if deadline is not None and clock() >= deadline:
            break
    return _result(graph, t, rounds, converged)


def eigentrust_dense(
    local: Mapping[bytes, Mapping[bytes, float]],
    pretrusted: Iterable[bytes],
    *,
    alpha: float = ALPHA,
    epsilon: float = EPSILON,
    max_rounds: int = MAX_ROUNDS,
) -> EigenTrustResult:
    """The textbook dense form (an n x n matrix): the reference the sparse form is tested and
    benchmarked against. Never used by the node: its memory is quadratic in the keys."""
    graph = _build(local, set(pretrusted))
    n = len(graph.keys)
    if n == 0:
        return EigenTrustResult({}, 0, True)
    p = graph.seed
    c = np.zeros((n, n))
    c[graph.dangling] = p
    c[graph.sources, graph.targets] = graph.weights
    t = p.copy()
    for rounds in range(1, max_rounds + 1):
        nxt = (1 - alpha) * (c.T @ t) + alpha * p
        change = float(np.abs(nxt - t).sum())
        t = nxt
        if change < epsilon:
            return _result(graph, t, rounds, True)
    return _result(graph, t, max_rounds, False)


def _result(graph: _Graph, t: np.ndarray, rounds: int, converged: bool) -> EigenTrustResult:
    return EigenTrustResult({key: float(t[i]) for i, key in enumerate(graph.keys)}, rounds, converged)
