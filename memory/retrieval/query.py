"""Pure pieces of search: request and result types, time filters, fusion (the FTS query is built by
``memory.fts``).

Fusion (hybrid mode), all factors documented here and shown by ``explain``::

    rrf        = 1 / (rrf_k + keyword rank) + vector_weight / (rrf_k + vector rank)    ranks from 1
    importance = 1 + importance_weight * crystal.importance                   in [1, 1 + w]
    recency    = 1 + recency_weight * 0.5 ** (age / recency_half_life)        in [1, 1 + w]
    steering   = 1 + RANK_WEIGHT * crystal.steering_reward               RANK_WEIGHT = 0.3
    time       = 1 + time_weight  when the crystal was said in, or names, the time the query names
    final      = rrf * importance * recency * steering * time

A superseded crystal's place goes to the crystal current now, with the better of the two scores;
with ``include_superseded`` the superseded one stays, at ``SUPERSEDED_FACTOR`` of its score.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from memory.errors import InvalidQuery
from memory.model import CallerScope, Crystal, Lifecycle, Origin, SemanticType
from memory.when import TimeAsked, time_window

# Defaults measured on LoCoMo (bench/locomo_recall.py, recall@10 over 1,986 questions): with
# neighbour context, BM25 alone 0.740; RRF k=60 with equal weights 0.647 (below BM25 alone: a
# weak vector leg gets as many votes as a strong keyword leg), k=60 weighted 0.3 0.739; k=10 with
# the vector leg weighted 0.7: 0.762, the best of k in {5, 10, 20, 60} x weight in {1, .7, .5, .3}.
# The classic k=60 stays one setting away (memory.rrf_k).
RRF_K = 10
#: Cosine similarity below which a hit found by meaning alone is not relevant (MiniLM: see README).
RELEVANCE_FLOOR = 0.3
VECTOR_WEIGHT = 0.7
GRAPH_WEIGHT = 0.5  # [memory] graph_weight
WHEN_WEIGHT = 0.3
#: A superseded crystal asked for (``include_superseded``) ranks at this share of its score, after
#: the crystal that replaced it.
SUPERSEDED_FACTOR = 0.5
#: A hit's score is multiplied by 1 + RANK_WEIGHT * its steering reward (``memory.cognition.steering``
#: moves the reward on feedback and outcomes; search reads it here).
RANK_WEIGHT = 0.3


def rank_factor(steering_reward: float) -> float:
    return 1.0 + RANK_WEIGHT * steering_reward


class SearchMode(StrEnum):
    HYBRID = "hybrid"  # BM25 + vector, fused by reciprocal rank, weighted by importance and recency
    KEYWORD = "keyword"  # BM25 only
    VECTOR = "vector"  # vector only
    RECENT = "recent"  # newest first (keyword-matched when a query is given)
    IMPORTANT = "important"  # most important first (keyword-matched when a query is given)
    TYPED = "typed"  # filter by semantic type, sort by ``sort``


class SortKey(StrEnum):
    RECENCY = "recency"
    IMPORTANCE = "importance"
    ACCESS_COUNT = "access_count"


@dataclass(frozen=True, slots=True)
class Weights:
    rrf_k: int = RRF_K
    vector_weight: float = VECTOR_WEIGHT
    importance_weight: float = 0.2
    recency_weight: float = 0.1
    recency_half_life_ms: int = 30 * 86_400_000
    # A query that names a time ("last Friday", "in March") favours crystals said then.
    time_weight: float = 0.5
    # A question that asks when favours words that name a time (``memory.when.time_asked``).
    when_weight: float = WHEN_WEIGHT
    # The graph leg's vote in a hybrid search (``memory.retrieval.graph_leg``); 0 leaves it out.
    graph_weight: float = GRAPH_WEIGHT
    # A ranked hit must match a query word or be at least this similar by meaning; a query with no
    # such hit answers nothing (and is a curiosity gap), not the least bad junk.
    relevance_floor: float = RELEVANCE_FLOOR


@dataclass(frozen=True)
class SearchRequest:
    query: str | None = None
    mode: SearchMode = SearchMode.HYBRID
    limit: int = 10
    since_ms: int | None = None
    until_ms: int | None = None
    types: frozenset[SemanticType] | None = None
    origins: frozenset[Origin] | None = None
    lifecycles: frozenset[Lifecycle] | None = None  # None: every visible lifecycle
    tags: frozenset[str] | None = None  # every one of these tags
    source: str | None = None  # this source exactly (an import's file, a session, a peer)
    offset: int = 0  # for the ordered modes: a page after the first
    include_archived: bool = False
    # Peer content held in quarantine (``memory.governance.quarantine``): never in a search unless asked for,
    # and then marked by its crystal's ``quarantined``, ``origin`` and ``source``.
    include_held: bool = False
    # A crystal a newer one superseded is shown as the current one by default; with this, both are
    # (the superseded one after it). A time filter ending before the change finds it as it was then.
    include_superseded: bool = False
    caller: CallerScope = CallerScope.LOCAL
    sort: SortKey = SortKey.RECENCY
    explain: bool = False
    touch: bool = True  # count this as an access of every hit
    #: A search that finds nothing is a curiosity gap (it reaches MEMORY.md): only the agent's and
    #: the CLI's. The dashboard's page searches are not, since any local page could make one.
    record_gap: bool = True
    weights: Weights = field(default_factory=Weights)

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= 1000:
            raise InvalidQuery(f"limit must be between 1 and 1000, got {self.limit}")
        if self.offset < 0 or (self.offset and self.mode in (SearchMode.HYBRID, SearchMode.KEYWORD, SearchMode.VECTOR)):
            raise InvalidQuery("offset is for the ordered modes (recent, important, typed), and not negative")
        if self.mode in (SearchMode.HYBRID, SearchMode.KEYWORD, SearchMode.VECTOR) and not (self.query or "").strip():
            raise InvalidQuery(f"{self.mode} search needs a query")
        if self.mode is SearchMode.TYPED and not self.types:
            raise InvalidQuery("typed search needs at least one semantic type")
        if self.lifecycles and Lifecycle.EXPIRED in self.lifecycles:
            raise InvalidQuery("expired crystals are never returned")
        if self.since_ms is not None and self.until_ms is not None and self.since_ms > self.until_ms:
            raise InvalidQuery("since is after until")


@dataclass(frozen=True, slots=True)
class Explain:
    keyword_rank: int | None
    keyword_score: float | None  # BM25 as SQLite reports it: lower (more negative) is better
    vector_rank: int | None
    vector_similarity: float | None  # cosine similarity, 1 is identical
    rrf: float
    importance_factor: float
    recency_factor: float
    steering_factor: float  # 1 + 0.3 x the crystal's steering reward (memory.cognition.steering)
    time_factor: float  # 1 + time_weight when said in the time the query names (memory.when)
    fused_rank: int | None  # None: not found by any leg, shown in place of a crystal it superseded
    final_score: float
    # The graph leg (memory.retrieval.graph_leg): its rank, and its score (the question's entities named).
    graph_rank: int | None = None
    graph_score: float | None = None
    # Supersession (memory.supersession): the superseded crystal whose place this current one took,
    # and for a superseded hit kept by ``include_superseded``, what replaced it and its factor.
    in_place_of: str | None = None
    superseded_by: str | None = None
    superseded_factor: float = 1.0
    # Ranked just above this earlier-said hit, whose update it may be (memory.supersession.judge.may_update).
    ahead_of: str | None = None
    # What the bounty it answered multiplied its score by (memory.retrieval.bounty_rank).
    bounty_factor: float = 1.0


@dataclass(frozen=True, slots=True)
class SearchHit:
    crystal: Crystal
    score: float
    explain: Explain | None = None
    replaces: str | None = None  # shown in place of this outdated crystal, which matched the query


_RELATIVE = re.compile(r"^\s*(\d+)\s*(s|m|min|h|d|w)\s*$", re.IGNORECASE)
_UNIT_MS = {"s": 1_000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


def parse_since(text: str, now_ms: int) -> int:
    """``45s``, ``30m``, ``24h``, ``7d``, ``2w`` before now, or an ISO date/datetime (UTC if no zone) -> epoch ms."""
    match = _RELATIVE.match(text)
    if match:
        return now_ms - int(match.group(1)) * _UNIT_MS[match.group(2).lower()]
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidQuery(
            f"cannot read time {text!r}: use 45s, 30m, 24h, 7d, 2w or an ISO date like 2026-11-01"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_bound(text: str, now_ms: int, *, until: bool = False) -> int:
    """A ``--since`` or ``--until`` bound: what ``parse_since`` reads, or the words a query takes
    ("yesterday", "last week", "in March", "3 days ago"): the start of that span for since, its
    end for until."""
    try:
        return parse_since(text, now_ms)
    except InvalidQuery:
        window = time_window(text, now_ms)
        if window is None:
            raise InvalidQuery(
                f"cannot read time {text!r}: use 45s, 30m, 24h, 7d, 2w, an ISO date like 2026-11-01, "
                "or words such as yesterday, last week, in March"
            ) from None
        return window.end_ms if until else window.start_ms


def reciprocal_rank_fusion(
    legs: Iterable[list[int]], k: int = RRF_K, weights: Iterable[float] | None = None
) -> dict[int, float]:
    """Sum of weight / (k + rank) over every ranked list an item appears in (ranks from 1)."""
    scores: dict[int, float] = {}
    legs = list(legs)
    for ranked, weight in zip(legs, weights if weights is not None else [1.0] * len(legs), strict=True):
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def importance_factor(importance: float, weights: Weights) -> float:
    return 1.0 + weights.importance_weight * importance


def time_factor(
    created_at_ms: int, refers_to: tuple[int, int] | None, asked: TimeAsked | None, weights: Weights
) -> float:
    """Said in the time the query names, or naming that time itself ("yesterday" said the day after);
    and for a question that asks when, words that name a time ("we fly on 14 June")."""
    if asked is None:
        return 1.0
    factor = 1.0
    window = asked.window
    if window is not None:
        said_then = window.start_ms <= created_at_ms < window.end_ms
        about_then = refers_to is not None and refers_to[0] < window.end_ms and window.start_ms < refers_to[1]
        factor += weights.time_weight if said_then or about_then else 0.0
    if asked.when and refers_to is not None:
        factor *= 1.0 + weights.when_weight
    return factor


def recency_factor(created_at_ms: int, now_ms: int, weights: Weights) -> float:
    age = max(0, now_ms - created_at_ms)
    decay: float = 0.5 ** (age / weights.recency_half_life_ms)
    return 1.0 + weights.recency_weight * decay
