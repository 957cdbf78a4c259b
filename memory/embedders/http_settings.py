"""The ``[memory]`` keys of the OpenAI-compatible embedder (``openai_http``), in a module of their own:
``node.config`` reads them without loading numpy, the HTTP client or the prompt gate."""

from __future__ import annotations

from pydantic import Field

from ground.settings import Section


class HttpEmbedderSettings(Section):
    """Where an OpenAI-compatible embeddings endpoint is (``[memory] embedder = "openai"``). The key is
    not a setting: it is read from the variable ``openai_api_key_env`` names where the embedder is built."""

    openai_url: str = ""
    openai_model: str = ""
    openai_api_key_env: str = "OPENAI_API_KEY"
    openai_dimensions: int = Field(default=0, ge=0, le=8192)
