"""The Knowledge Crystal: the unit of memory, and the closed sets that describe it.

A crystal is written once and then changes only through the store (access
counts, lifecycle transitions, importance recalculation). ``NewCrystal`` is
what callers hand in; ``Crystal`` is what the store hands back.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from enum import StrEnum

from ground.authority import Capability, Speaker, may
from memory.errors import InvalidValue


class SemanticType(StrEnum):
    FACT = "fact"
    PREFERENCE = "preference"
    TASK_PATTERN = "task_pattern"
    SKILL = "skill"
    EPISODE = "episode"
    INSIGHT = "insight"
    RELATIONSHIP = "relationship"
    GOAL = "goal"
    GENERAL = "general"


#: Private by nature: these never leave the node, whatever their scope says.
MEMORY_TYPES = frozenset(
    {SemanticType.EPISODE, SemanticType.PREFERENCE, SemanticType.RELATIONSHIP, SemanticType.FACT, SemanticType.GOAL}
)
#: May be listed on the marketplace once they pass its quality gates.
KNOWLEDGE_TYPES = frozenset({SemanticType.SKILL, SemanticType.TASK_PATTERN})


class Origin(StrEnum):
    INDEXED = "indexed"  # from a file the node indexed
    SESSION = "session"  # from an agent's conversation
    SKILL = "skill"  # written as a skill by the local agent
    DREAM = "dream"  # synthesised by the dream cycle
    USER_INPUT = "user_input"  # typed by the person
    INFERRED = "inferred"  # derived by consolidation or the agent
    PEER = "peer"  # received from another node


class Lifecycle(StrEnum):
    GENERATED = "generated"  # stored, not yet used
    ACTIVATED = "activated"  # retrieved at least once
    CONSOLIDATED = "consolidated"  # survived a consolidation cycle / merged into
    ARCHIVED = "archived"  # kept for provenance, out of default search (e.g. merged away)
    EXPIRED = "expired"  # forgotten, decayed away or past its TTL; never returned
    FROZEN = "frozen"  # pinned: exempt from decay and merging


#: Never shown by default; ``EXPIRED`` is never shown at all.
HIDDEN_LIFECYCLES = frozenset({Lifecycle.ARCHIVED, Lifecycle.EXPIRED})


class Scope(StrEnum):
    PRIVATE = "private"  # this node and its local agent
    SHARED = "shared"  # may be shown to trusted callers beyond the local agent
    PUBLIC = "public"  # may be published


class Sensitivity(StrEnum):
    NORMAL = "normal"
    PERSONAL = "personal"  # personal data about someone: never leaves the node
    CONFIDENTIAL = "confidential"  # secrets: the local agent only


class Lifespan(StrEnum):
    PERMANENT = "permanent"  # no decay, no expiry
    TTL = "ttl"  # expires at ``expires_at_ms``
    DECAY = "decay"  # importance decays; expires when it falls below the forget threshold


class EpistemicLayer(StrEnum):
    """What kind of knowing a crystal is (``memory.epistemic`` decides it at ingest)."""

    EXPERIENCE = "experience"  # lived or said: an event, a conversation, a goal stated
    DIRECTIVE = "directive"  # the person's explicit preference or instruction: ranks above anything inferred
    WORLD_FACT = "world_fact"  # how things are: facts, people, procedures
    MENTAL_MODEL = "mental_model"  # inferred by the node: insights, patterns, syntheses


class TypeSource(StrEnum):
    """Who decided a crystal's semantic type."""

    CALLER = "caller"  # given with the crystal
    MODEL = "model"  # the offline typer (``memory.cognition.typing``)
    LLM = "llm"  # the [llm] endpoint
    CORRECTION = "correction"  # the person, with ``memory retype``
    LEGACY = "legacy"  # stored before automatic typing existed (release 9 and earlier)


class AssociationType(StrEnum):
    RELATED_TO = "related_to"
    UPDATES = "updates"
    CONTRADICTS = "contradicts"
    CAUSED_BY = "caused_by"
    RESULT_OF = "result_of"
    PART_OF = "part_of"
    REFERENCES = "references"  # one note names another ([[wikilink]]), brought in by an import


class Feedback(StrEnum):
    """What a crystal turned out to be (``memory.cognition.steering`` says what each does)."""

    USEFUL = "useful"
    WRONG = "wrong"
    OUTDATED = "outdated"


class CallerScope(StrEnum):
    """Who is reading: decides what governance lets through."""

    LOCAL = "local"  # the agent on this machine: sees everything not expired
    SHARED = "shared"  # a trusted caller beyond it: shared/public, never confidential
    PUBLIC = "public"  # anyone: public and normal sensitivity only


@dataclass(frozen=True, slots=True)
class Hormones:
    """A snapshot of the hormonal state, each in [0, 1]."""

    dopamine: float = 0.0
    cortisol: float = 0.0
    oxytocin: float = 0.0

    def __post_init__(self) -> None:
        for name in ("dopamine", "cortisol", "oxytocin"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidValue(f"{name} must be in [0, 1], got {value}")


@dataclass(frozen=True, slots=True)
class SkillVersion:
    stable_skill_id: str
    version: int = 1
    previous_version_id: str | None = None
    deprecated: bool = False
    deprecated_by: str | None = None
    tags: tuple[str, ...] = ()
    category: str | None = None


#: A bounty's priority boost is 1 + MAX_EXTRA x reward / (reward + HALF_REWARD): 1.0 with no reward,
#: 1.1 at 1 USDC (half the extra), 1.18 at 10 USDC, never 1.2. A bounty's reward is a stranger's
#: claim, backed by nothing until a sale, so a huge one buys no more than a modest one.
BOUNTY_BOOST_MAX_EXTRA = 0.2
BOUNTY_BOOST_HALF_REWARD_MICRO_USDC = 1_000_000


def bounty_boost(reward_micro_usdc: int) -> float:
    """The seed's ``bountyPriorityBoost``: a multiplier in [1, 1 + ``BOUNTY_BOOST_MAX_EXTRA``),
    growing with the reward and saturating (see above)."""
    reward = max(0, reward_micro_usdc)
    return 1.0 + BOUNTY_BOOST_MAX_EXTRA * reward / (reward + BOUNTY_BOOST_HALF_REWARD_MICRO_USDC)


@dataclass(frozen=True, slots=True)
class Bounty:
    """The bounty a knowledge crystal answered (the seed's ``bountyMatchId``) and its reward; the
    boost (``bountyPriorityBoost``) is derived from the reward, never stored apart from it, so no
    row can carry a boost its reward does not give."""

    bounty_id: str
    reward_micro_usdc: int
    priority_boost: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "priority_boost", bounty_boost(self.reward_micro_usdc))


class HeldStatus(StrEnum):
    """Where a crystal held in quarantine stands (``memory.governance.quarantine``)."""

    HELD = "held"
    APPROVED = "approved"  # by the person
    REJECTED = "rejected"  # by the person: the same text is refused from now on
    RELEASED = "released"  # its author became trusted here, and nothing in it reads like instructions


@dataclass(frozen=True, slots=True)
class Quarantine:
    """Why a crystal from a peer is held back from the agent until the person reviews it."""

    reason: str  # e.g. "author below trusted"
    flags: tuple[str, ...] = ()  # instruction-like findings in its text (memory.governance.injection)


@dataclass(frozen=True, slots=True)
class Verification:
    is_verified: bool = False
    verified_by: str | None = None  # hex public key of the management node


MAX_TEXT_CHARS = 100_000
MAX_CONTEXT_CHARS = 4_000
MAX_TAGS = 16
MAX_TAG_CHARS = 64


@dataclass(frozen=True, slots=True)
class NewCrystal:
    """What a caller asks the store to remember. Everything but ``text`` has a default."""

    text: str
    semantic_type: SemanticType | None = None  # None: typed at ingest (``memory.cognition``)
    origin: Origin = Origin.USER_INPUT
    created_at_ms: int | None = None  # the time the content refers to; default: now
    source_path: str | None = None
    source: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    importance: float = 0.5
    importance_floor: float = 0.0  # the importance its caller stated: consolidation never goes below
    emotional_valence: float = 0.0
    hormones: Hormones = field(default_factory=Hormones)
    curiosity_boost: float = 0.0
    steering_reward: float = 0.0
    epistemic_layer: EpistemicLayer | None = None  # None: decided at ingest from the type and the text
    type_confidence: float = 1.0  # how sure whoever typed it was
    type_source: TypeSource = TypeSource.CALLER
    verification: Verification = field(default_factory=Verification)
    bounty: Bounty | None = None
    skill: SkillVersion | None = None
    scope: Scope = Scope.PRIVATE
    sensitivity: Sensitivity | None = None  # None: classify from the text
    lifespan: Lifespan = Lifespan.DECAY
    ttl_ms: int | None = None  # with Lifespan.TTL
    parents: tuple[str, ...] = ()  # crystals this one was derived from
    actor: str = "local"  # who caused it: local, agent, peer:<hex key>, dream, consolidation
    # Text that situates this crystal (the message before it, the document's heading): embedded
    # together with ``text`` so a short reply like "yes, last May" is still findable by meaning.
    # Never returned as the crystal's text and not part of its content hash.
    context: str | None = None
    # Set for content from peers that the agent must not see unasked (``memory.governance.quarantine``).
    quarantine: Quarantine | None = None
    # Words to filter by (``memory list --tags``), also found by keyword search; a skill's come with
    # its version (``skill.tags``) instead.
    tags: tuple[str, ...] = ()
    # Who said these words (``ground.authority``): what they may do follows from it alone. ``None``:
    # the speaker ``default_speaker`` gives its origin; every ingest path of the node names one.
    speaker: Speaker | None = None
    #: the name a transcript gives whoever said the words (capture), so that two people of one chat,
    #: the same speaker to the authority table, are still told apart
    voice: str | None = None

    def __post_init__(self) -> None:
        if not self.text or not self.text.strip():
            raise InvalidValue("a crystal needs non-empty text")
        if len(self.text) > MAX_TEXT_CHARS:
            raise InvalidValue(f"text is {len(self.text)} characters; at most {MAX_TEXT_CHARS}")
        if len(self.tags) > MAX_TAGS or any(
            not t or len(t) > MAX_TAG_CHARS or any(ch.isspace() for ch in t) for t in self.tags
        ):
            raise InvalidValue(f"tags are at most {MAX_TAGS} words of at most {MAX_TAG_CHARS} characters each")
        if self.context is not None and len(self.context) > MAX_CONTEXT_CHARS:
            raise InvalidValue(f"context is {len(self.context)} characters; at most {MAX_CONTEXT_CHARS}")
        if not 0.0 <= self.importance <= 1.0:
            raise InvalidValue("importance must be in [0, 1]")
        if not 0.0 <= self.importance_floor <= self.importance:
            raise InvalidValue("importance_floor must be in [0, importance]")
        if not -1.0 <= self.emotional_valence <= 1.0:
            raise InvalidValue("emotional_valence must be in [-1, 1]")
        if (self.lifespan is Lifespan.TTL) != (self.ttl_ms is not None):
            raise InvalidValue("ttl_ms is required with lifespan=ttl and only then")
        if self.ttl_ms is not None and self.ttl_ms <= 0:
            raise InvalidValue("ttl_ms must be positive")
        if self.line_start is not None and self.line_end is not None and self.line_end < self.line_start:
            raise InvalidValue("line_end before line_start")
        if not 0.0 <= self.type_confidence <= 1.0:
            raise InvalidValue("type_confidence must be in [0, 1]")
        if self.lifespan is Lifespan.PERMANENT and not may(speaker_of(self), Capability.DIRECT):
            raise InvalidValue(f"only the person keeps words for good; {speaker_of(self).value} may not (pin)")
        if (self.semantic_type is SemanticType.SKILL) and self.skill is None:
            object.__setattr__(self, "skill", SkillVersion(stable_skill_id=content_hash(self.text)[:16]))


@dataclass(frozen=True, slots=True)
class Superseded:
    """Which newer crystal replaced this one, and when."""

    by: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class Crystal:
    """A stored crystal, as read back from the store."""

    id: str
    text: str
    content_hash: str
    semantic_type: SemanticType
    origin: Origin
    created_at_ms: int
    stored_at_ms: int
    updated_at_ms: int
    source_path: str | None
    source: str | None
    line_start: int | None
    line_end: int | None
    importance: float
    importance_floor: float
    access_count: int
    last_access_ms: int | None
    emotional_valence: float
    hormones: Hormones
    curiosity_boost: float
    dream_count: int
    last_dream_ms: int | None
    steering_reward: float
    epistemic_layer: EpistemicLayer
    type_confidence: float
    type_source: TypeSource
    verification: Verification
    bounty: Bounty | None
    skill: SkillVersion | None
    lifecycle: Lifecycle
    scope: Scope
    sensitivity: Sensitivity
    lifespan: Lifespan
    expires_at_ms: int | None
    embedded_with: str | None
    context: str | None = None
    quarantined: bool = False  # held for review: only shown when peer content is asked for
    superseded: Superseded | None = None  # a newer crystal replaced it (memory.supersession)
    # The span of time its own words name, resolved against when it was said: [from, until) in ms.
    refers_to: tuple[int, int] | None = None
    tags: tuple[str, ...] = ()  # a skill's are its version's; others' came with an import or a caller
    speaker: Speaker = Speaker.FILE  # who said it (ground.authority); the weakest when unknown
    #: the name a transcript gives whoever said the words ("Caroline", "user"); None outside one
    voice: str | None = None

    @property
    def is_memory(self) -> bool:
        return self.semantic_type in MEMORY_TYPES


#: The speaker of a new crystal whose caller named none, by its origin: what code that predates the
#: authority table meant (the node's own ingest paths all name theirs; a test checks).
_SPEAKER_OF_ORIGIN = {
    Origin.USER_INPUT: Speaker.PERSON,
    Origin.SESSION: Speaker.AGENT,
    Origin.SKILL: Speaker.AGENT,
    Origin.INDEXED: Speaker.FILE,
    Origin.PEER: Speaker.PEER,
    Origin.DREAM: Speaker.NODE,
    Origin.INFERRED: Speaker.NODE,
}


def speaker_of(new: NewCrystal) -> Speaker:
    """Who said ``new``'s words: its own speaker, else the one its origin implies."""
    return new.speaker if new.speaker is not None else _SPEAKER_OF_ORIGIN[new.origin]


def normalise_text(text: str) -> str:
    """What dedup compares: NFC, whitespace collapsed, case kept (case can carry meaning)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def content_hash(text: str) -> str:
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()
