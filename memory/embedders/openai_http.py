"""An OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Ollama, llama.cpp server, vLLM, TEI…).

Uses only the standard library's HTTP client, so it adds no dependency. The
API key is read from the environment by the caller and never logged.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence

import numpy as np

from ground.authority import Speaker
from memory.embedders.base import Vectors, normalise_rows
from memory.embedders.http_settings import HttpEmbedderSettings
from memory.errors import EmbedderError
from memory.governance.prompt_gate import Passage, Route, decide
from memory.governance.rules import classify_sensitivity, redacted
from memory.model import Sensitivity

BATCH = 64


class OpenAIHttpEmbedder:
    carries_meaning = True

    def __init__(self, settings: HttpEmbedderSettings, *, api_key: str | None = None, timeout_s: float = 30.0) -> None:
        if not settings.openai_url or not settings.openai_model:
            raise EmbedderError("the openai embedder needs memory.openai_url and memory.openai_model")
        self._settings = settings
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._dim = settings.openai_dimensions or len(self._request(["dimension probe"])[0])

    @property
    def id(self) -> str:
        return f"openai-{self._settings.openai_model}-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        # Nothing the sensitivity rules call a secret leaves the node (issue 27): a confidential text
        # is embedded with its secrets replaced, so its topic stays findable by meaning.
        texts = [_as_the_gate_allows(t) for t in texts]
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            rows.extend(self._request(list(texts[start : start + BATCH])))
        matrix = np.array(rows, dtype=np.float32)
        if matrix.shape != (len(texts), self._dim):
            raise EmbedderError(
                f"embedding endpoint returned shape {matrix.shape}, expected ({len(texts)}, {self._dim})"
            )
        return normalise_rows(matrix)

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self.embed_documents([text])[0]
        return row

    def _request(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, object] = {"model": self._settings.openai_model, "input": texts}
        if self._settings.openai_dimensions:
            body["dimensions"] = self._settings.openai_dimensions
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(  # noqa: S310 - the URL is the user's configured endpoint
            self._settings.openai_url.rstrip("/") + "/embeddings", data=json.dumps(body).encode(), headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:  # noqa: S310
                doc = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise EmbedderError(f"embedding endpoint {self._settings.openai_url} failed: {exc}") from exc
        except ValueError as exc:
            raise EmbedderError(f"embedding endpoint {self._settings.openai_url} returned non-JSON") from exc
        try:
            data = sorted(doc["data"], key=lambda item: item["index"])
            return [list(map(float, item["embedding"])) for item in data]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"embedding endpoint {self._settings.openai_url} returned an unexpected shape") from exc


def _as_the_gate_allows(text: str) -> str:
    confidential = classify_sensitivity(text) is Sensitivity.CONFIDENTIAL
    passage = decide(Route.REMOTE_EMBEDDER, speaker=Speaker.AGENT, held=False, confidential=confidential,
                     instructions=False)  # fmt: skip
    return redacted(text) if passage is Passage.REDACTED else text
