"""The memory package's tables of the config file, each made of the settings of the components it
configures (a component takes the whole table: ``Endocrine.attach(store, config.hormones)``).
``node.config.Config`` composes them and checks what spans two tables (``typer = "llm"`` needs
``[llm]``); the words of each key are in ``configs/edge.toml``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ground.settings import Section, SettingError
from memory.capture.watch_settings import WatchSettings
from memory.dynamics.hormones import HormoneSettings
from memory.dynamics.importance import DecaySettings
from memory.embedders.http_settings import HttpEmbedderSettings
from memory.storage.store_types import LinkSettings


class MemorySettings(HttpEmbedderSettings, LinkSettings):
    """``[memory]``: the store's file, its embedder, its links, search's fusion, typing and supersession."""

    db_file: str = Field(default="memory/crystals.db", min_length=1)
    embedder: Literal["minilm", "hashing", "openai"] = "minilm"
    embed_batch: int = Field(default=64, ge=1, le=1024)
    # The daemon runs a local model (minilm) in a worker process, started when a text first needs it
    # and let go after this many seconds unused, so an idle daemon holds none of it; 0 keeps it.
    embedder_idle_s: float = Field(default=300.0, ge=0, le=86_400)
    # Run MiniLM's weights as float32, unpacked from int8 once per machine (memory/embedders/minilm_fold):
    # a query embeds in ~3 ms instead of ~50; off, each run unpacks them again (configs/edge.toml).
    minilm_fold_weights: bool = True
    rrf_k: int = Field(default=10, ge=1, le=1000)
    vector_weight: float = Field(default=0.7, ge=0, le=10)
    relevance_floor: float = Field(default=0.3, ge=0, le=1)
    max_curiosity_gaps: int = Field(default=200, ge=1, le=100_000)
    typer: Literal["offline", "llm"] = "offline"
    # A newer crystal that updates an older one supersedes it (memory.supersession): "offline" judges
    # by wording and similarity, "llm" also asks [llm] about ambiguous choices, "off" never does.
    supersession: Literal["offline", "llm", "off"] = "offline"


class CaptureSettings(WatchSettings):
    """``[capture]``: the folders followed (``memory.capture.watch``) and how statements are picked."""

    # "llm": the [llm] endpoint picks the statements worth keeping, checked against the messages
    # (memory.capture.llm_extract); offline, deterministic, when it fails or a message is confidential.
    extractor: Literal["offline", "llm"] = "offline"


class HormonesSettings(HormoneSettings):
    """``[hormones]``: the half-lives and homeostasis of the hormonal state (``memory.dynamics``)."""


class ConsolidationSettings(DecaySettings):
    """``[consolidation]``: how importance decays, what is forgotten, promoted and merged, and how often."""

    interval_min: float = Field(default=30.0, gt=0, le=10_080)


class LlmSettings(Section):
    """``[llm]``: an OpenAI-compatible chat endpoint for ``[memory] typer = "llm"`` and
    ``supersession = "llm"`` and ``[capture] extractor = "llm"``. The key is read from the variable
    ``api_key_env`` names where the endpoint is built (``memory.setup.store.chat_endpoint``)."""

    url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = Field(default=10.0, gt=0, le=600)


class DreamSettings(Section):
    """``[dream]``: how often the dream cycle runs, where its workspace is, and who writes MEMORY.md."""

    interval_min: float = Field(default=120.0, gt=0, le=10_080)
    workspace_dir: str = Field(default="workspace", min_length=1)
    synthesizer: Literal["extractive", "chat"] = "extractive"
    chat_url: str = ""
    chat_model: str = ""
    chat_api_key_env: str = "OPENAI_API_KEY"
    chat_timeout_s: float = Field(default=60.0, gt=0, le=600)

    @model_validator(mode="after")
    def _chat_needs_endpoint(self) -> DreamSettings:
        if self.synthesizer == "chat" and not (self.chat_url and self.chat_model):
            raise SettingError('synthesizer = "chat" needs chat_url and chat_model')
        return self
