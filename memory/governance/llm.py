"""An OpenAI-compatible chat endpoint (OpenAI, Ollama, llama.cpp, vLLM): one blocking call that
returns the model's text, for what the prompt gate lets leave (``memory.governance.prompt_gate``).
Callers run it in a worker thread and decide what a failure means (the typer falls back to its
offline model; the dream keeps the old MEMORY.md). The key is sent as a bearer token and never
logged."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ground.authority import Speaker
from memory.errors import MemoryError_
from memory.governance.prompt_gate import Passage, Route, decide
from memory.governance.rules import classify_sensitivity
from memory.model import Sensitivity


class LlmError(MemoryError_):
    """The chat endpoint failed, was too slow, or answered something that is not a chat completion."""


class MalformedAnswer(LlmError):
    """The endpoint answered, but not in the shape the prompt asked for: the caller decides offline."""


class ConfidentialText(LlmError):
    """A message held text the sensitivity rules call confidential: it never leaves the node, and the
    caller decides offline instead (issue 27: a password was sent to the chat endpoint for typing)."""


@dataclass(frozen=True, slots=True)
class ChatEndpoint:
    url: str  # base URL, e.g. http://127.0.0.1:11434/v1
    model: str
    api_key: str | None = None
    timeout_s: float = 10.0

    def complete(self, messages: list[dict[str, str]], *, max_tokens: int = 400) -> str:
        """The assistant's answer to ``messages`` (temperature 0); ``LlmError`` on any failure, and
        ``ConfidentialText`` before anything is sent when a message holds a secret."""
        for message in messages:
            confidential = classify_sensitivity(str(message.get("content", ""))) is Sensitivity.CONFIDENTIAL
            passage = decide(Route.LLM_ENDPOINT, speaker=Speaker.AGENT, held=False, confidential=confidential,
                             instructions=False)  # fmt: skip
            if passage is Passage.NEVER:
                raise ConfidentialText("a message holds text classified confidential; it is not sent")
        body = {"model": self.model, "temperature": 0, "max_tokens": max_tokens, "messages": messages}
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(  # noqa: S310 - the URL is the user's configured endpoint
            self.url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - configured URL
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise LlmError(f"chat endpoint answered HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise LlmError(f"chat endpoint unreachable or too slow: {exc}") from None
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LlmError("chat endpoint returned something that is not a chat completion") from None
        if not isinstance(content, str):
            raise LlmError("chat completion content is not text")
        return content


def answer_json(answer: str) -> Any:
    """A model's answer read as JSON, a code fence around it allowed; ``ValueError`` when it is not JSON."""
    return json.loads(answer.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip())
