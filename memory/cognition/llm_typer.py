"""Typing with a language model: the optional ``[memory] typer = "llm"``. A statement goes to the
``[llm]`` endpoint with the nine types and their meanings; the answer must be JSON naming one of
them. Any failure (unreachable, slow, HTTP error, an answer that is not one type) is logged and
the offline typer decides instead, so a node never stores a crystal untyped because a model was
away. Bulk imports always use the offline typer: a model call per crystal would take hours.
"""

from __future__ import annotations

import asyncio
import logging

from memory.cognition.typing import Guess
from memory.errors import InvalidValue
from memory.governance.llm import ChatEndpoint, LlmError, answer_json
from memory.model import SemanticType

_log = logging.getLogger("memory.llm_typer")

_MEANINGS = {
    SemanticType.FACT: "how something stably is: about the person (health, work, address), a thing or a system",
    SemanticType.PREFERENCE: "what the person likes or wants, including how the agent should behave or answer",
    SemanticType.TASK_PATTERN: "something done repeatedly: a routine, a recurring chore, a usual way of working",
    SemanticType.SKILL: "how to do something: steps, a command, a recipe, a fix",
    SemanticType.EPISODE: "one event at a time: something that happened",
    SemanticType.INSIGHT: "a conclusion: a lesson, a realisation, a pattern noticed, a cause found",
    SemanticType.RELATIONSHIP: "who a person is to someone: family, friends, colleagues",
    SemanticType.GOAL: "what someone wants to achieve or plans to do",
    SemanticType.GENERAL: "none of these: greetings, acknowledgements, questions, filler",
}
SYSTEM_PROMPT = (
    "You classify one memory statement of a personal AI agent into exactly one type. Types:\n"
    + "\n".join(f"- {t.value}: {meaning}" for t, meaning in _MEANINGS.items())
    + '\nAnswer with JSON only: {"type": "<one type>", "confidence": <0 to 1>}.'
)
#: The statement is cut to this length in the prompt (what it is shows early; the cost stays bounded).
PROMPT_CHARS = 2_000


class LlmTyper:
    def __init__(self, endpoint: ChatEndpoint) -> None:
        self._endpoint = endpoint

    async def guess(self, text: str) -> Guess | None:
        """The model's type for ``text``, or None when it could not give one (then type offline)."""
        messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": text[:PROMPT_CHARS]}]
        try:
            answer = await asyncio.to_thread(self._endpoint.complete, messages, max_tokens=40)
            return parse_answer(answer)
        except (LlmError, ValueError) as exc:
            _log.warning("llm_typer.fell_back", extra={"fields": {"error": str(exc)[:200]}})
            return None


def parse_answer(answer: str) -> Guess:
    """``{"type": ..., "confidence": ...}`` (a code fence around it is fine); ``ValueError`` otherwise."""
    try:
        doc = answer_json(answer)
        stype = SemanticType(str(doc["type"]).strip().lower())
        confidence = float(doc.get("confidence", 0.8))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidValue(f"the model's answer is not one type: {answer[:80]!r}") from exc
    return Guess(stype, min(1.0, max(0.0, confidence)))
