"""Embedders: one interface (``base``), one file per implementation, and a factory by name."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from memory.errors import EmbedderError

if TYPE_CHECKING:  # the HTTP client and the gate it needs load only for the openai embedder (the
    # MiniLM worker process imports this package too, and is ~9 MB smaller without them), and
    # numpy only with an embedder: node.config reads this package's settings without either
    from memory.embedders.base import Embedder
    from memory.embedders.http_settings import HttpEmbedderSettings

EMBEDDER_NAMES = ("minilm", "hashing", "openai")
__all__ = ["EMBEDDER_NAMES", "make_embedder"]


def make_embedder(
    name: str,
    http: HttpEmbedderSettings | None = None,
    *,
    worker_idle_s: float | None = None,
    fold_weights: bool = True,
) -> Embedder:
    """Build the embedder a config names; ``EmbedderError`` says what is missing. With
    ``worker_idle_s`` (a daemon) a local model runs in a worker process let go after that long unused
    (0: kept while the daemon runs); without it, in this process. ``fold_weights``: see
    ``minilm_onnx.load_model``."""
    if name == "hashing":
        from memory.embedders.hashing import HashingEmbedder

        return HashingEmbedder()
    if name == "minilm":
        if worker_idle_s is not None:
            from memory.embedders.minilm_worker import MiniLMWorkerEmbedder

            return MiniLMWorkerEmbedder(idle_s=worker_idle_s, fold_weights=fold_weights)
        from memory.embedders.minilm_onnx import MiniLMOnnxEmbedder

        return MiniLMOnnxEmbedder(fold_weights=fold_weights)
    if name == "openai":
        from memory.embedders.http_settings import HttpEmbedderSettings
        from memory.embedders.openai_http import OpenAIHttpEmbedder

        http = http or HttpEmbedderSettings()  # the key is read here, so that no settings object holds it
        return OpenAIHttpEmbedder(http, api_key=os.environ.get(http.openai_api_key_env) or None)
    raise EmbedderError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")
