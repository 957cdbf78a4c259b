"""What the settings make of the chat endpoints: the ``[llm]`` endpoint (the typer, the supersession
judge, the capture extractor) and the ``[dream]`` synthesizer. Each key is read from the variable
its settings name, here where the endpoint is built, so that no settings object holds a secret."""

from __future__ import annotations

import os

from memory.capture.llm_extract import LlmExtractor
from memory.governance.llm import ChatEndpoint
from memory.setup.settings import CaptureSettings, DreamSettings, LlmSettings
from memory.working_memory.synthesis import ChatSynthesizer, ExtractiveSynthesizer, Synthesizer


def chat_endpoint(llm: LlmSettings) -> ChatEndpoint:
    """The ``[llm]`` endpoint, with its key read from the variable ``api_key_env`` names."""
    return ChatEndpoint(llm.url, llm.model, os.environ.get(llm.api_key_env) or None, llm.timeout_s)


def configured_extractor(capture: CaptureSettings, llm: LlmSettings) -> LlmExtractor | None:
    """``[capture] extractor = "llm"``: a model picks what to keep from a conversation; else None."""
    return LlmExtractor(chat_endpoint(llm)) if capture.extractor == "llm" else None


def configured_synthesizer(dream: DreamSettings) -> Synthesizer:
    """Who writes MEMORY.md: the ``[dream]`` chat endpoint (its key read from ``chat_api_key_env``),
    or the extractive synthesizer that needs none."""
    if dream.synthesizer == "chat":
        key = os.environ.get(dream.chat_api_key_env) or None
        return ChatSynthesizer(ChatEndpoint(dream.chat_url, dream.chat_model, key, dream.chat_timeout_s))
    return ExtractiveSynthesizer()
