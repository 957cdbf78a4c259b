"""A language model's second opinion on supersession: the optional ``[memory] supersession = "llm"``.

Only choices the offline judge finds ambiguous (two older statements scoring nearly alike) go to
the ``[llm]`` endpoint, with the new statement and up to five older ones, numbered. The answer
must be JSON naming one number, or 0 for none. Any failure (unreachable, slow, an answer that is
not one of the numbers) is logged and the offline choice stands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from memory.errors import InvalidValue
from memory.governance.llm import ChatEndpoint, LlmError, answer_json
from memory.supersession.judge import Candidate

_log = logging.getLogger("memory.supersession.llm")

SYSTEM_PROMPT = (
    "You keep a person's memory current. Given a NEW statement and numbered OLDER statements, say "
    "which older statement the new one makes outdated: the same fact about the same person or "
    "thing, now with another value. A statement about something else, or one that only adds "
    'information, makes nothing outdated. Answer with JSON only: {"outdated": <number, or 0 for none>}.'
)
#: Each statement is cut to this length in the prompt (the cost of a call stays bounded).
PROMPT_CHARS = 600


class LlmJudge:
    def __init__(self, endpoint: ChatEndpoint) -> None:
        self._endpoint = endpoint

    async def pick(self, new: str, candidates: Sequence[Candidate]) -> str | None:
        """The key of the candidate ``new`` makes outdated, "" for none, None when the model could
        not say (then the offline choice stands)."""
        numbered = "\n".join(f"{i}. {c.text[:PROMPT_CHARS]}" for i, c in enumerate(candidates, start=1))
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": f"NEW: {new[:PROMPT_CHARS]}\nOLDER:\n{numbered}"},
        ]
        try:
            answer = await asyncio.to_thread(self._endpoint.complete, messages, max_tokens=20)
            index = parse_answer(answer, len(candidates))
        except (LlmError, ValueError) as exc:
            _log.warning("supersession.llm_fell_back", extra={"fields": {"error": str(exc)[:200]}})
            return None
        return candidates[index - 1].key if index else ""


def parse_answer(answer: str, count: int) -> int:
    """``{"outdated": n}`` with 0 <= n <= count (a code fence around it is fine); ``ValueError`` otherwise."""
    try:
        value = answer_json(answer)["outdated"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidValue(f"the model's answer names no statement: {answer[:80]!r}") from exc
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= count:
        raise InvalidValue(f"the model named no statement of the {count}: {answer[:80]!r}")
    return value
