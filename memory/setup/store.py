"""The memory store opened as the settings say: its embedder, its links, what runs after each
embedding, the hormonal state, curiosity and the typer (the daemon, the CLI without a daemon, the
benchmarks and the tests open it here)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from ground.clock import wall_clock_ms
from ground.settings import SettingError
from memory.cognition.curiosity import Curiosity
from memory.cognition.llm_typer import LlmTyper
from memory.cognition.refine_type import refine_type
from memory.dynamics.endocrine import Endocrine
from memory.dynamics.hormones import HormoneSettings
from memory.embedders import make_embedder
from memory.embedders.base import Embedder, HeldModel, Vectors
from memory.entities.index import index_owed
from memory.errors import MemoryError_
from memory.graph.links import auto_link
from memory.intake.store import IntakeStore
from memory.setup.endpoints import chat_endpoint
from memory.setup.settings import LlmSettings, MemorySettings
from memory.storage.migrations import SchemaSet
from memory.storage.store import EmbeddedHook, MemoryStore
from memory.supersession.detect import Supersession
from memory.supersession.llm_judge import LlmJudge


def configured_embedder(memory: MemorySettings, *, in_worker: bool = False) -> Embedder:
    """The configured embedder; ``in_worker`` (the daemon) runs a local model in a worker process
    that is let go after ``[memory] embedder_idle_s`` unused. ``SettingError`` names what is missing."""
    try:
        idle_s = memory.embedder_idle_s if in_worker else None
        return make_embedder(memory.embedder, memory, worker_idle_s=idle_s, fold_weights=memory.minilm_fold_weights)
    except MemoryError_ as exc:
        raise SettingError(f"memory.embedder = {memory.embedder!r}: {exc}") from exc


def embedded_hook(memory: MemorySettings, llm: LlmSettings) -> EmbeddedHook:
    """What runs after each embedding: the automatic type decided again by words and meaning (before
    supersession, which reads the type), the entities it names, then graph links, and supersession
    unless it is off."""
    then: EmbeddedHook
    if memory.supersession == "off":
        then = auto_link
    else:
        judge = LlmJudge(chat_endpoint(llm)) if memory.supersession == "llm" else None
        then = Supersession(judge).hook()

    async def after_embedding(store: MemoryStore, crystal_id: str, vector: Vectors) -> int:
        if isinstance(store, IntakeStore):  # the node's store: the typer its intake types with refines
            await refine_type(store, store.typer, crystal_id, vector)
        await index_owed(store)  # who and what it names (and anything else owed a reading)
        return await then(store, crystal_id, vector)

    return after_embedding


async def open_store(
    path: Path,
    memory: MemorySettings,
    hormones: HormoneSettings,
    llm: LlmSettings,
    now_ms: Callable[[], int] | None = None,
    *,
    in_worker: bool = False,
    schemas: Sequence[SchemaSet] = (),
) -> IntakeStore:
    """The memory file at ``path``, opened with the configured embedder (``in_worker``: see
    ``configured_embedder``) and ``schemas``, other packages' tables in the file; its owner closes
    the embedder after the store (``close_store``)."""
    embedder = configured_embedder(memory, in_worker=in_worker)
    store = await IntakeStore.open(
        path,
        embedder,
        links=memory,
        now_ms=now_ms or wall_clock_ms,
        on_embedded=embedded_hook(memory, llm),
        schemas=schemas,
    )
    try:
        await Endocrine.attach(store, hormones)
        await Curiosity.attach(store, max_open=memory.max_curiosity_gaps)
        if memory.typer == "llm":
            store.typer.llm = LlmTyper(chat_endpoint(llm))
    except BaseException:
        await close_store(store)
        raise
    return store


async def close_store(store: MemoryStore) -> None:
    """Close the store, then let its embedder's worker go (when it has one)."""
    try:
        await store.close()
    finally:
        if isinstance(store.embedder, HeldModel):
            await asyncio.to_thread(store.embedder.close)
