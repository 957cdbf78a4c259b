"""Embedders: one interface (``base``), one file per implementation, and a factory by name."""

from __future__ import annotations

from memory.embedders.base import Embedder
from memory.embedders.openai_http import HttpEmbedderSettings
from memory.errors import EmbedderError

EMBEDDER_NAMES = ("minilm", "hashing", "openai")
__all__ = ["EMBEDDER_NAMES", "HttpEmbedderSettings", "make_embedder"]


def make_embedder(name: str, http: HttpEmbedderSettings | None = None) -> Embedder:
    """Build the embedder a config names; ``EmbedderError`` says what is missing."""
    if name == "hashing":
        from memory.embedders.hashing import HashingEmbedder

        return HashingEmbedder()
    if name == "minilm":
        from memory.embedders.minilm_onnx import MiniLMOnnxEmbedder

        return MiniLMOnnxEmbedder()
    if name == "openai":
        from memory.embedders.openai_http import OpenAIHttpEmbedder

        return OpenAIHttpEmbedder(http or HttpEmbedderSettings())
    raise EmbedderError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")
