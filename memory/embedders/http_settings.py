"""The ``[memory]`` keys of the OpenAI-compatible embedder (``openai_http``), in a module of their own:
``node.config`` reads them without loading numpy, the HTTP client or the prompt gate."""

from __future__ import annotations

from pydantic import Field

from ground.settings import Section


class HttpEmbedderSettings(Section):
    """Where an OpenAI-compatible embeddings endpoint is (``[memory] embedder = "openai"``). The key is
    not a setting: it is read from the variable ``openai_api_key_env`` names where the embedder is built."""

    openai_url: str = ""
    """For embedder = "openai": base URL (e.g. "http://127.0.0.1:11434/v1" for Ollama) and model name."""
    openai_model: str = ""
    openai_api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable that holds the API key (the key itself never goes in a file)."""
    openai_dimensions: int = Field(default=0, ge=0, le=8192)
    """Requested vector size for models that support it; 0 asks the endpoint for its default."""
