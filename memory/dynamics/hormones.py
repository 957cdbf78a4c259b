"""The hormonal state: three levels that decay toward homeostasis and modulate memory.

Plain data and plain functions; ``memory.dynamics.endocrine`` keeps the live state and
persists it. The numbers below are the documented model:

- Each level decays exponentially toward its homeostasis with its half-life
  (dopamine 30 min, cortisol 60, oxytocin 45; homeostasis 0.15, 0.02, 0.10):
  ``level(t) = home + (level(0) - home) * 0.5 ** (dt / half_life)``. Levels are
  clamped to [0, 1] and anything below 0.001 is 0.
- Events spike levels (``SPIKES``: reward dopamine +0.3; error cortisol +0.3; social
  oxytocin +0.3; achievement dopamine +0.4 and oxytocin +0.2; urgency cortisol +0.4);
  ``detect_events`` finds them in text by the design's trigger words (``TRIGGERS``).
- A network cortisol override (from a signed weather event) raises *effective*
  cortisol to max(local, network) and halts untrusted ingestion until it expires.
- Emotional valence of a moment is ``(dopamine + oxytocin - cortisol) / 2``.
- Consolidation modulation: decay resistance ``0.3 c + 0.2 d + 0.2 o`` (at most 0.5, with
  c the effective cortisol), added to how much a crystal's valence slows its decay; merge
  threshold ``base + 0.03 c`` (merge more cautiously while things go wrong).
- Retrieval modulation: the importance weight of search times ``1 + 0.2 d``, the recency
  weight times ``1 + 0.3 c``.

These are the design's numbers (``../shared/seeds/000``); the tests assert them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from pydantic import Field

from ground.settings import Section
from memory.design import MERGE_CORTISOL_SLOPE, MERGE_SIMILARITY
from memory.errors import InvalidValue
from memory.model import Hormones, Origin

MINUTE_MS = 60_000
ZERO_BELOW = 0.001
#: Session-origin content was said to the agent by a person: a small bonding baseline.
SESSION_OXYTOCIN = 0.1
#: A hormone above this at dream time is worth a scratch note.
NOTABLE_LEVEL = 0.7


class Event(StrEnum):
    REWARD = "reward"
    ERROR = "error"
    SOCIAL = "social"
    ACHIEVEMENT = "achievement"
    URGENCY = "urgency"


#: (dopamine, cortisol, oxytocin) added by each event.
SPIKES: dict[Event, tuple[float, float, float]] = {
    Event.REWARD: (0.3, 0.0, 0.0),
    Event.ERROR: (0.0, 0.3, 0.0),
    Event.SOCIAL: (0.0, 0.0, 0.3),
    Event.ACHIEVEMENT: (0.4, 0.0, 0.2),
    Event.URGENCY: (0.0, 0.4, 0.0),
}

#: The design's trigger words per hormone ("success", "fixed", "shipped", "deployed", "milestone";
#: "fail", "error", "bug", "crash", "urgent", "deadline"; "thank", "help", "appreciate", "team",
#: "collaborate"), each with its inflections, and the event each one is: a fix or a success is a
#: reward, shipping or a milestone an achievement; a failure an error, a deadline urgency.
TRIGGERS: dict[Event, tuple[str, ...]] = {
    Event.REWARD: ("success", "fixed"),
    Event.ACHIEVEMENT: ("shipped", "deployed", "milestone"),
    Event.ERROR: ("fail", "error", "bug", "crash"),
    Event.URGENCY: ("urgent", "deadline"),
    Event.SOCIAL: ("thank", "help", "appreciate", "team", "collaborate"),
}
_INFLECTIONS: dict[str, str] = {
    "success": r"success(?:es|ful|fully)?",
    "fixed": r"fixed",
    "shipped": r"shipped",
    "deployed": r"deployed",
    "milestone": r"milestones?",
    "fail": r"fail(?:s|ed|ing|ure|ures)?",
    "error": r"errors?",
    "bug": r"bugs?",
    "crash": r"crash(?:es|ed|ing)?",
    "urgent": r"urgent(?:ly)?",
    "deadline": r"deadlines?",
    "thank": r"thank(?:s|ed|ful|ing)?",
    "help": r"help(?:s|ed|ful|ing)?",
    "appreciate": r"appreciat(?:e|es|ed|ion)",
    "team": r"team(?:s|mate|mates|work)?",
    "collaborate": r"collaborat(?:e|es|ed|ing|ion)",
}
_EVENT_PATTERNS = {
    event: re.compile(rf"\b(?:{'|'.join(_INFLECTIONS[w] for w in words)})\b", re.IGNORECASE)
    for event, words in TRIGGERS.items()
}


class HormoneSettings(Section):
    """The ``[hormones]`` keys: each level's half-life (minutes) and the homeostasis it decays to."""

    dopamine_half_life_min: float = Field(default=30.0, gt=0, le=10_080)
    """The hormonal state modulates memory. Each level decays toward its homeostasis
    with its half-life (minutes, (0, 10080]); homeostasis levels are in [0, 1].
    Dopamine (reward) boosts the weight of importance in search (x 1 + 0.2 d); cortisol
    (stress, also raised by signed network "weather") favours recent crystals (x 1 + 0.3 c)
    and makes merging more cautious (+ 0.03 c); all three slow decay (0.3 c + 0.2 d + 0.2 o,
    at most 0.5). Spikes and trigger words are the design's (README, "Memory dynamics").
    """
    cortisol_half_life_min: float = Field(default=60.0, gt=0, le=10_080)
    oxytocin_half_life_min: float = Field(default=45.0, gt=0, le=10_080)
    dopamine_home: float = Field(default=0.15, ge=0, le=1)
    cortisol_home: float = Field(default=0.02, ge=0, le=1)
    oxytocin_home: float = Field(default=0.10, ge=0, le=1)


@dataclass(frozen=True, slots=True)
class NetworkOverride:
    """Cortisol imposed by a management node's weather event, until ``until_ms``."""

    level: float
    until_ms: int
    reason: str
    issued_by: str = ""  # hex public key of the management node, "" when set locally

    def __post_init__(self) -> None:
        if not 0.0 <= self.level <= 1.0:
            raise InvalidValue(f"override level must be in [0, 1], got {self.level}")

    def active(self, now_ms: int) -> bool:
        return now_ms < self.until_ms


@dataclass(frozen=True, slots=True)
class HormonalState:
    """Local levels as of ``at_ms``, and the network override if one was received."""

    dopamine: float
    cortisol: float
    oxytocin: float
    at_ms: int
    override: NetworkOverride | None = None

    @classmethod
    def at_rest(cls, now_ms: int, settings: HormoneSettings | None = None) -> HormonalState:
        s = settings or HormoneSettings()
        return cls(s.dopamine_home, s.cortisol_home, s.oxytocin_home, now_ms)

    def to_json(self) -> str:
        doc: dict[str, Any] = {
            "dopamine": self.dopamine,
            "cortisol": self.cortisol,
            "oxytocin": self.oxytocin,
            "at_ms": self.at_ms,
        }
        if self.override is not None:
            o = self.override
            doc["override"] = {"level": o.level, "until_ms": o.until_ms, "reason": o.reason, "issued_by": o.issued_by}
        return json.dumps(doc, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> HormonalState:
        """Parse a persisted state; ``ValueError`` on anything malformed."""
        try:
            doc = json.loads(text)
            override = doc.get("override")
            return cls(
                dopamine=_clamp(float(doc["dopamine"])),
                cortisol=_clamp(float(doc["cortisol"])),
                oxytocin=_clamp(float(doc["oxytocin"])),
                at_ms=int(doc["at_ms"]),
                override=NetworkOverride(
                    level=float(override["level"]),
                    until_ms=int(override["until_ms"]),
                    reason=str(override["reason"]),
                    issued_by=str(override.get("issued_by", "")),
                )
                if override
                else None,
            )
        except (KeyError, TypeError, AttributeError, ValueError) as exc:  # JSONDecodeError is a ValueError
            raise InvalidValue(f"malformed hormonal state: {exc}") from exc


def _clamp(level: float) -> float:
    if math.isnan(level):
        return 0.0
    level = min(1.0, max(0.0, level))
    return 0.0 if level < ZERO_BELOW else level


def _toward(level: float, home: float, half_life_min: float, dt_ms: int) -> float:
    return _clamp(home + (level - home) * 0.5 ** (dt_ms / (half_life_min * MINUTE_MS)))


def decayed(state: HormonalState, now_ms: int, settings: HormoneSettings) -> HormonalState:
    """The state at ``now_ms``: levels decayed toward homeostasis, an expired override dropped.
    A clock that went backwards decays nothing (never grows a level)."""
    dt = max(0, now_ms - state.at_ms)
    override = state.override if state.override is not None and state.override.active(now_ms) else None
    return HormonalState(
        dopamine=_toward(state.dopamine, settings.dopamine_home, settings.dopamine_half_life_min, dt),
        cortisol=_toward(state.cortisol, settings.cortisol_home, settings.cortisol_half_life_min, dt),
        oxytocin=_toward(state.oxytocin, settings.oxytocin_home, settings.oxytocin_half_life_min, dt),
        at_ms=max(now_ms, state.at_ms),
        override=override,
    )


def spiked(state: HormonalState, events: list[Event], now_ms: int, settings: HormoneSettings) -> HormonalState:
    """Decay to ``now_ms``, then add each event's spike."""
    current = decayed(state, now_ms, settings)
    d, c, o = current.dopamine, current.cortisol, current.oxytocin
    for event in events:
        dd, dc, do = SPIKES[event]
        d, c, o = _clamp(d + dd), _clamp(c + dc), _clamp(o + do)
    return replace(current, dopamine=d, cortisol=c, oxytocin=o)


def with_override(state: HormonalState, override: NetworkOverride | None) -> HormonalState:
    return replace(state, override=override)


def detect_events(text: str) -> list[Event]:
    """Events a text suggests, each at most once, in ``Event`` order."""
    return [event for event in Event if _EVENT_PATTERNS[event].search(text)]


def effective(state: HormonalState, now_ms: int, settings: HormoneSettings) -> Hormones:
    """The levels that modulate memory now: cortisol is the max of local and network."""
    current = decayed(state, now_ms, settings)
    cortisol = current.cortisol
    if current.override is not None:
        cortisol = max(cortisol, current.override.level)
    return Hormones(dopamine=current.dopamine, cortisol=cortisol, oxytocin=current.oxytocin)


def halts_untrusted_ingestion(state: HormonalState, now_ms: int) -> bool:
    """While a network override lasts, content from untrusted peers is refused."""
    return state.override is not None and state.override.active(now_ms)


def valence(levels: Hormones) -> float:
    """Emotional valence of a moment: (dopamine + oxytocin - cortisol) / 2, in [-0.5, 1]."""
    return (levels.dopamine + levels.oxytocin - levels.cortisol) / 2


def influence_at_ingest(levels: Hormones, origin: Origin) -> Hormones:
    """The snapshot stored with a new crystal; session content gets the oxytocin baseline."""
    if origin is Origin.SESSION:
        return replace(levels, oxytocin=_clamp(levels.oxytocin + SESSION_OXYTOCIN))
    return levels


#: The most hormones add to how much valence slows decay (the design's cap).
MAX_DECAY_RESISTANCE = 0.5


@dataclass(frozen=True, slots=True)
class ConsolidationModulation:
    decay_resistance: float  # the hormones' share: 0.3 c + 0.2 d + 0.2 o, at most 0.5
    emotion_decay_resistance: float  # the configured resistance plus that share, in [0, 0.95]
    merge_threshold: float  # similarity at or above which two crystals merge


def consolidation_modulation(
    levels: Hormones, base_resistance: float = 0.5, base_merge_threshold: float = MERGE_SIMILARITY
) -> ConsolidationModulation:
    """The design's ``getConsolidationModulation``; ``levels.cortisol`` is the effective cortisol."""
    hormonal = min(MAX_DECAY_RESISTANCE, 0.3 * levels.cortisol + 0.2 * levels.dopamine + 0.2 * levels.oxytocin)
    return ConsolidationModulation(
        decay_resistance=hormonal,
        emotion_decay_resistance=min(0.95, base_resistance + hormonal),
        merge_threshold=min(0.99, base_merge_threshold + MERGE_CORTISOL_SLOPE * levels.cortisol),
    )


@dataclass(frozen=True, slots=True)
class RetrievalModulation:
    importance_boost: float  # multiplies the importance weight of search: 1 + 0.2 d, in [1, 1.2]
    recency_bias: float  # multiplies the recency weight of search: 1 + 0.3 c, in [1, 1.3]


def retrieval_modulation(levels: Hormones) -> RetrievalModulation:
    return RetrievalModulation(importance_boost=1.0 + 0.2 * levels.dopamine, recency_bias=1.0 + 0.3 * levels.cortisol)


def notable(levels: Hormones) -> list[tuple[str, float]]:
    """Hormones above ``NOTABLE_LEVEL``, worth a scratch note at dream time."""
    named = (("dopamine", levels.dopamine), ("cortisol", levels.cortisol), ("oxytocin", levels.oxytocin))
    return [(name, value) for name, value in named if value > NOTABLE_LEVEL]
