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

from pydantic import Field, model_validator

from ground.settings import Section, SettingError
from memory.design import (
    DECAY_RATE_PER_MS,
    EMOTION_DECAY_RESISTANCE,
    FORGET_THRESHOLD,
    MERGE_SIMILARITY,
    PROMOTE_THRESHOLD,
)

DAY_MS = 86_400_000


class DecaySettings(Section):
    """How importance decays and what consolidation does at which importance (the ``[consolidation]``
    keys; ``memory.design`` has the defaults' reasons)."""

    decay_rate_per_ms: float = Field(default=DECAY_RATE_PER_MS, ge=0, le=1e-6)  # ln 2 / rate ~ 16 days half-life
    """Importance I = (1 - exp(-0.1 (accesses + 1))) * exp(-rate * (1 - |valence| * resistance) * time since last use).
    Per millisecond; 5e-10 halves an unused crystal's importance in about 16 days. [0, 1e-6].
    """
    forget_threshold: float = Field(default=FORGET_THRESHOLD, ge=0, lt=1)  # below: expired
    """Below this importance a crystal is forgotten (expired). Skills and permanent crystals never decay."""
    promote_threshold: float = Field(default=PROMOTE_THRESHOLD, gt=0, le=1)  # at or above: consolidated
    """At or above this, an activated crystal is consolidated (and queued for dream replay at
    1, 3, 7, 14 and 30 days) and becomes a merge candidate. Must be above forget_threshold.
    """
    merge_similarity: float = Field(default=MERGE_SIMILARITY, gt=0, le=1)  # near-duplicates this similar merge
    """Cosine similarity at or above which near-duplicates merge (cortisol raises it by up to 0.03).
    A merge archives the weaker crystal with a link to the stronger; `memory unmerge` undoes it.
    """
    emotion_decay_resistance: float = Field(default=EMOTION_DECAY_RESISTANCE, ge=0, lt=1)
    """How much a crystal's emotional valence slows its decay, in [0, 1)."""
    retention_days: int = Field(default=30, ge=0, le=3_650)  # expired and archived crystals are purged this long after
    """Days an expired or archived crystal is kept (for unmerge and audit) before it is purged."""

    @property
    def retention_ms(self) -> int:
        return self.retention_days * DAY_MS

    @model_validator(mode="after")
    def _forget_below_promote(self) -> DecaySettings:
        if self.forget_threshold >= self.promote_threshold:
            raise SettingError("forget_threshold must be below promote_threshold")
        return self


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
