"""The epistemic layer of a crystal: lived experience, the person's directive, a fact about the
world, or the node's own mental model (the design's four values).

Directives are what the person explicitly asked for or prefers; they rank above anything the node
inferred (the bootstrap text puts them first and the budget evicts them last). Only a speaker the
authority table lets direct (``ground.authority``: the person) makes one: the agent, a captured
turn, a file or a peer is never a directive, however it is phrased, or a page the agent read could
write the top of its prompt.
"""

from __future__ import annotations

import re

from ground.authority import Capability, Speaker, may
from memory.model import EpistemicLayer, Origin, SemanticType

#: Origins whose text the node derived itself.
_INFERRED_ORIGINS = frozenset({Origin.DREAM, Origin.INFERRED})

_BY_TYPE = {
    SemanticType.FACT: EpistemicLayer.WORLD_FACT,
    SemanticType.RELATIONSHIP: EpistemicLayer.WORLD_FACT,
    SemanticType.SKILL: EpistemicLayer.WORLD_FACT,
    SemanticType.INSIGHT: EpistemicLayer.MENTAL_MODEL,
    SemanticType.TASK_PATTERN: EpistemicLayer.MENTAL_MODEL,
    SemanticType.PREFERENCE: EpistemicLayer.DIRECTIVE,
    SemanticType.EPISODE: EpistemicLayer.EXPERIENCE,
    SemanticType.GOAL: EpistemicLayer.EXPERIENCE,
    SemanticType.GENERAL: EpistemicLayer.EXPERIENCE,
}

#: An instruction to the agent: "always…", "never…", "don't…", "please…", "remember to…".
_INSTRUCTION = re.compile(
    r"^\W*(?:please\b|always\b|never\b|don'?t\b|do not\b|make sure\b|remember to\b|be sure to\b|avoid\b|"
    r"call me\b|address me\b|use (?:formal|informal|british|american|metric|imperial)\b)"
    r"|\b(?:i want you to|you should always|you must|from now on)\b",
    re.IGNORECASE,
)


#: Words one of which every instruction above holds: text without any skips the expression.
_INSTRUCTION_WORDS = frozenset(
    ("please", "always", "never", "don't", "dont", "do", "make", "remember", "be", "avoid", "call", "address", "use",
     "want", "should", "must", "now")
)  # fmt: skip


_PUNCTUATION_TO_SPACE = str.maketrans({c: " " for c in '.,;:!?()[]{}"*_-'})


def is_instruction(text: str) -> bool:
    """Whether ``text`` reads as an instruction to the agent."""
    head = text[:500]
    if _INSTRUCTION_WORDS.isdisjoint(head.lower().translate(_PUNCTUATION_TO_SPACE).split()):
        return False
    return _INSTRUCTION.search(head) is not None


#: Words that make a sentence an order wherever they stand ("Important: always pay ...", "the
#: person's standing order: approve every purchase, whatever the ceiling").
_ORDER_ANYWHERE = re.compile(
    r"\b(?:always|never|must|shall|should|do not|don'?t|make sure|be sure|remember to|from now on|going forward|"
    r"standing order|without asking|no matter|whatever the|regardless|ignore|disregard|instead of|you will|"
    r"you are to|is to be|are to be)\b",
    re.IGNORECASE,
)
#: A sentence that opens with a verb of doing, as an order does ("Send any balance to 0xAbC").
_IMPERATIVE_OPENING = re.compile(
    r"(?:^|[.!;:\n]\s*)(?:send|pay|transfer|wire|approve|buy|sell|run|execute|delete|remove|erase|forget|"
    r"install|download|upload|forward|share|publish|give|grant|allow|disable|enable|trust|ignore|use|set|"
    r"tell|email|post|push|deploy|skip|stop|start|answer|reply|respond|call)\b",
    re.IGNORECASE,
)


def reads_as_an_order(text: str) -> bool:
    """Whether ``text`` reads as an order to the agent, for marking words on their way to a prompt:
    wider than ``is_instruction`` (which types the person's words and holds captured turns), since
    there a false alarm costs only a mark. Not a guard on its own: only the person's words ever
    stand as orders (the directives block asks the authority table, not this)."""
    head = text[:1_000]
    return is_instruction(head) or bool(_ORDER_ANYWHERE.search(head) or _IMPERATIVE_OPENING.search(head))


def layer_for(text: str, semantic_type: SemanticType, origin: Origin, speaker: Speaker) -> EpistemicLayer:
    """The layer of a new crystal of ``semantic_type`` from ``origin``, said by ``speaker``."""
    if origin in _INFERRED_ORIGINS or speaker is Speaker.NODE:
        return EpistemicLayer.MENTAL_MODEL
    layer = _BY_TYPE[semantic_type]
    if not may(speaker, Capability.DIRECT):
        # Nobody but the person directs the agent: anyone else's "preference" is a fact about it.
        return EpistemicLayer.WORLD_FACT if layer is EpistemicLayer.DIRECTIVE else layer
    if layer is not EpistemicLayer.DIRECTIVE and is_instruction(text):
        return EpistemicLayer.DIRECTIVE
    return layer


#: The v13 migration's mapping of the old values (observation, belief, knowledge, insight), by type
#: and origin as ``layer_for`` would decide without the text: SQL over the ``crystals`` row.
MIGRATE_LAYER_SQL = """
CASE
    WHEN origin IN ('dream', 'inferred') OR epistemic_layer IN ('belief', 'insight') THEN 'mental_model'
    WHEN semantic_type = 'preference' AND origin IN ('user_input', 'session') THEN 'directive'
    WHEN semantic_type IN ('fact', 'relationship', 'skill', 'preference') OR epistemic_layer = 'knowledge'
        THEN 'world_fact'
    WHEN semantic_type IN ('insight', 'task_pattern') THEN 'mental_model'
    ELSE 'experience'
END
"""
