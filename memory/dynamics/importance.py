"""Ebbinghaus-style importance: how strongly a crystal is held now.

    I(t)       = max(floor, min(1, f(n) * exp(-lambda_eff * dt) * (1 + curiosity) * (1 + 0.5 * steering)))
    f(n)       = 1 - exp(-0.1 * (n + 1))                      n: access count
    lambda_eff = decay_rate * (1 - |valence| * emotion_decay_resistance)
    dt         = now - last reinforcement (last access, else when the node stored it)

``curiosity`` is the crystal's curiosity boost at ingest (novelty, a filled gap: ``memory.
cognition.curiosity``), ``steering`` its steering reward in [-1, 1] (``memory.cognition.steering``)
and ``floor`` the importance its caller stated, which consolidation never goes below.

Time runs from when the node learned a crystal, not from the date its content
refers to: an imported diary from 2019 does not arrive already forgotten.
Skills, permanent crystals and frozen ones never decay (dt counts as 0).

``importance`` is the reference in Python; ``IMPORTANCE_SQL`` is the same formula
for SQLite, which the consolidation engine runs over the whole table in one
statement. A test keeps the two equal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memory.design import (
    DECAY_RATE_PER_MS,
    EMOTION_DECAY_RESISTANCE,
    FORGET_THRESHOLD,
    MERGE_SIMILARITY,
    PROMOTE_THRESHOLD,
)
from memory.errors import InvalidValue

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class DecaySettings:
    decay_rate_per_ms: float = DECAY_RATE_PER_MS  # half-life of an unreinforced crystal: ln 2 / rate ~ 16 days
    forget_threshold: float = FORGET_THRESHOLD  # below: expired
    promote_threshold: float = PROMOTE_THRESHOLD  # at or above: consolidated, and a merge candidate
    merge_similarity: float = MERGE_SIMILARITY  # cosine similarity at or above which near-duplicates merge
    emotion_decay_resistance: float = EMOTION_DECAY_RESISTANCE
    retention_ms: int = 30 * DAY_MS  # expired and archived crystals are purged this long after

    def __post_init__(self) -> None:
        if self.decay_rate_per_ms < 0:
            raise InvalidValue("decay_rate_per_ms must be >= 0")
        if not 0 <= self.forget_threshold < self.promote_threshold <= 1:
            raise InvalidValue("need 0 <= forget_threshold < promote_threshold <= 1")
        if not 0 < self.merge_similarity <= 1:
            raise InvalidValue("merge_similarity must be in (0, 1]")
        if not 0 <= self.emotion_decay_resistance < 1:
            raise InvalidValue("emotion_decay_resistance must be in [0, 1)")
        if self.retention_ms < 0:
            raise InvalidValue("retention_ms must be >= 0")


def access_strength(access_count: int) -> float:
    """f(n): 0.095 for a crystal never retrieved, 0.70 after 11 retrievals, approaching 1."""
    return 1.0 - math.exp(-0.1 * (access_count + 1))


#: How much the steering reward rescales importance (see ``memory.cognition.steering``).
STEERING_IMPORTANCE_WEIGHT = 0.5


def importance(
    *,
    access_count: int,
    reinforced_at_ms: int,
    now_ms: int,
    valence: float,
    decays: bool,
    decay_rate_per_ms: float,
    emotion_decay_resistance: float,
    curiosity_boost: float = 0.0,
    steering_reward: float = 0.0,
    floor: float = 0.0,
) -> float:
    held = access_strength(access_count)
    if decays:
        dt = max(0, now_ms - reinforced_at_ms)
        rate = decay_rate_per_ms * (1.0 - abs(valence) * emotion_decay_resistance)
        held *= math.exp(-rate * dt)
    modulated = held * (1.0 + curiosity_boost) * (1.0 + STEERING_IMPORTANCE_WEIGHT * steering_reward)
    return max(floor, min(1.0, modulated))


#: Named parameters :now, :rate, :resistance. Whether a row decays is decided by the caller's
#: WHERE clause (see ``DECAYING_SQL``); rows that do not decay get ``STRENGTH_SQL``.
_MODULATED = (
    "max(importance_floor, min(1.0, {held} * (1.0 + curiosity_boost) * "
    f"(1.0 + {STEERING_IMPORTANCE_WEIGHT} * steering_reward)))"
)
_STRENGTH = "(1.0 - exp(-0.1 * (access_count + 1)))"
STRENGTH_SQL = _MODULATED.format(held=_STRENGTH)
IMPORTANCE_SQL = _MODULATED.format(
    held=f"{_STRENGTH} * exp(-(:rate * (1.0 - abs(emotional_valence) * :resistance)) "
    "* max(0, :now - coalesce(last_access_ms, stored_at_ms)))"
)
#: Rows whose importance decays with time.
DECAYING_SQL = "semantic_type != 'skill' AND lifespan != 'permanent' AND lifecycle != 'frozen'"
