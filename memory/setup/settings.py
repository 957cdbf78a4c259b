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
    """The Knowledge Crystal database (one SQLite file), relative to the data dir unless absolute."""
    embedder: Literal["minilm", "hashing", "openai"] = "minilm"
    """Which embedder turns text into vectors:
      "minilm"  all-MiniLM-L6-v2, int8 ONNX, bundled and offline (384-d, ~5 ms per query)
      "hashing" zero-dependency lexical fallback (fast, adds little over keyword search)
      "openai"  any OpenAI-compatible /embeddings endpoint (OpenAI, Ollama, llama.cpp, vLLM)
    Changing it re-embeds every crystal in the background; the old vectors are never mixed in.
    """
    embed_batch: int = Field(default=64, ge=1, le=1024)
    """How many crystals the background embedder embeds per batch (larger pads less; measured in bench importing)."""
    # The daemon runs a local model (minilm) in a worker process, started when a text first needs it
    # and let go after this many seconds unused, so an idle daemon holds none of it; 0 keeps it.
    embedder_idle_s: float = Field(default=300.0, ge=0, le=86_400)
    """The daemon runs the local model (minilm) in a worker process, started when a text first needs it
    and let go after this many seconds unused, so an idle node holds none of it (it costs ~75 MB of
    its own memory while it runs, and ~70 MB of file pages); 0 keeps it running while the node runs.
    """
    # Run MiniLM's weights as float32, unpacked from int8 once per machine (memory/embedders/minilm_fold):
    # a query embeds in ~3 ms instead of ~50; off, each run unpacks them again (configs/edge.toml).
    minilm_fold_weights: bool = True
    """Run the model's weights as float32, unpacked from int8 once per machine into the user's cache
    folder (90 MB of disk, mapped rather than copied): a search's query embeds in ~3 ms instead of ~50
    and 1,500 short texts at 226 instead of 144 a second. Off, each run unpacks every weight again:
    the worker is ~20 MB smaller between runs but ~70 MB larger during one (measured on this machine).
    """
    rrf_k: int = Field(default=10, ge=1, le=1000)
    """Hybrid search fuses the keyword and vector rankings by reciprocal rank:
      score = 1 / (rrf_k + keyword rank) + vector_weight / (rrf_k + vector rank)
    Defaults measured on LoCoMo (recall@10 0.762 vs 0.647 for the classic rrf_k = 60 unweighted).
    """
    vector_weight: float = Field(default=0.7, ge=0, le=10)
    graph_weight: float = Field(default=0.5, ge=0, le=10)
    """The entity graph's vote in a hybrid search: + graph_weight / (rrf_k + graph rank). The graph
    leg finds the crystals naming who and what the question names, and one hop from the best hits
    (memory/retrieval/graph_leg.py); 0 leaves it out. 0.5 measured on conversations (1.0 was worse).
    """
    relevance_floor: float = Field(default=0.3, ge=0, le=1)
    """A hit found by meaning alone must be at least this similar (cosine) to count: a query with no
    hit that matches a word or clears this floor answers nothing, and is kept as a curiosity gap
    (MEMORY.md's Curiosity Gaps, `memory gaps`). Measured for MiniLM (README). [0, 1].
    """
    max_curiosity_gaps: int = Field(default=200, ge=1, le=100_000)
    """Open curiosity gaps kept; past it the least asked, then the oldest, make room. [1, 100000]."""
    typer: Literal["offline", "llm"] = "offline"
    """Who types a memory stored without a type:
      "offline" the bundled model (README, "Automatic typing"), no network
      "llm"     the [llm] endpoint first, one memory at a time; the offline model when it fails
                (bulk imports always use the offline model)
    """
    # A newer crystal that updates an older one supersedes it (memory.supersession): "offline" judges
    # by wording and similarity, "llm" also asks [llm] about ambiguous choices, "off" never does.
    supersession: Literal["offline", "llm", "off"] = "offline"
    """When a newer memory updates an older one ("Actually, Tomas is in Tallinn now, not Riga"), the
    older is marked superseded: search shows the current one in its place (`memory search
    --include-superseded` or `--until` finds the old), MEMORY.md drops it, `memory unsupersede` undoes it.
      "offline" judged by wording and similarity on this node (README, "Outdated facts")
      "llm"     also asks the [llm] endpoint when two older memories are equally likely
      "off"     never
    """


class CaptureSettings(WatchSettings):
    """``[capture]``: the folders followed (``memory.capture.watch``) and how statements are picked."""

    # "llm": the [llm] endpoint picks the statements worth keeping, checked against the messages
    # (memory.capture.llm_extract); offline, deterministic, when it fails or a message is confidential.
    extractor: Literal["offline", "llm"] = "offline"
    """Who picks what is worth keeping: "offline" (rules in the node) or "llm" (the [llm] endpoint,
    its answer checked against the messages; needs [llm] url and model).
    """


class HormonesSettings(HormoneSettings):
    """``[hormones]``: the half-lives and homeostasis of the hormonal state (``memory.dynamics``)."""


class ConsolidationSettings(DecaySettings):
    """``[consolidation]``: how importance decays, what is forgotten, promoted and merged, and how often."""

    interval_min: float = Field(default=30.0, gt=0, le=10_080)
    """Minutes between consolidation cycles (rescore, expire, merge, write). (0, 10080].
    `bitterbot-node memory consolidate --dry-run` shows what one would change.
    """


class LlmSettings(Section):
    """``[llm]``: an OpenAI-compatible chat endpoint for ``[memory] typer = "llm"`` and
    ``supersession = "llm"`` and ``[capture] extractor = "llm"``. The key is read from the variable
    ``api_key_env`` names where the endpoint is built (``memory.setup.store.chat_endpoint``)."""

    url: str = ""
    """An OpenAI-compatible chat endpoint for [memory] typer = "llm": base URL (e.g.
    "http://127.0.0.1:11434/v1" for Ollama) and model.
    """
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding its API key, if it needs one."""
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    """Seconds to wait for an answer before typing offline instead. (0, 600]."""


class DreamSettings(Section):
    """``[dream]``: how often the dream cycle runs, where its workspace is, and who writes MEMORY.md."""

    interval_min: float = Field(default=120.0, gt=0, le=10_080)
    """Minutes between dream cycles, which rewrite MEMORY.md from scratch notes and new memories. (0, 10080]."""
    workspace_dir: str = Field(default="workspace", min_length=1)
    """Folder of MEMORY.md and memory/scratch.md, relative to the data dir unless absolute.
    A hand-written MEMORY.md found there is backed up and kept above the dream's sections.
    """
    synthesizer: Literal["extractive", "chat"] = "extractive"
    """"extractive": deterministic selection, no model needed (the default).
    "chat": an OpenAI-compatible /chat/completions endpoint writes the sections.
    """
    chat_url: str = ""
    """For synthesizer = "chat": base URL (e.g. "http://127.0.0.1:11434/v1" for Ollama) and model."""
    chat_model: str = ""
    chat_api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the chat endpoint's API key, if it needs one."""
    chat_timeout_s: float = Field(default=60.0, gt=0, le=600)
    """Seconds to wait for the chat endpoint; on timeout the old MEMORY.md is kept. (0, 600]."""

    @model_validator(mode="after")
    def _chat_needs_endpoint(self) -> DreamSettings:
        if self.synthesizer == "chat" and not (self.chat_url and self.chat_model):
            raise SettingError('synthesizer = "chat" needs chat_url and chat_model')
        return self
