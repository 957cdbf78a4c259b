"""A conversation import as a new user runs it: short chat messages (JSONL) into a real store.

What is measured, in one run, on the same messages:
- storing: messages/s through the importer and ``remember_many`` (typing on, no embedding);
- embedding as the daemon does it, with MiniLM and the daemon's after-embedding hook (types refined,
  links, supersession), at the default batch (64) and at the earlier default (16, the baseline);
- the model alone on the message texts (``embed_documents`` on the bare texts): the ceiling.

Issue 32's goal is 300 short messages/s, or embedding in the background while the memory is already
searchable by keyword. The second is what the node does: ``memory import`` beside a daemon stores
and returns, and the daemon embeds (``status``, the dashboard and ``bitterbot_embedding_backlog``
show how many wait). The figures say how long the background takes.
"""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from memory.embedders import make_embedder
from memory.embedders.base import Embedder
from memory.importer import crystals_from_file, find_sources
from memory.intake.store import IntakeStore
from memory.model import NewCrystal
from memory.setup.settings import LlmSettings, MemorySettings
from memory.setup.store import embedded_hook

GOAL_PER_S = 300
BATCHES = (64, 16)  # the default, then the earlier default (the baseline)
_WORDS = " ".join(
    [
        "ok sure thanks the deploy went fine tomorrow lunch with ana at noon did you see the game",
        "my cat is sick again can we move the call to friday I booked the train tickets for march",
        "the heating is broken",
    ]
).split()


def messages(count: int, seed: int = 3) -> list[str]:
    """Short chat lines in two voices, 4-14 words each, as a JSONL export of a chat holds them."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        words = rng.choices(_WORDS, k=rng.randint(4, 14))
        lines.append(json.dumps({"role": rng.choice(["user", "assistant"]), "content": " ".join(words)}))
    return lines


async def _embed_rate(items: list[NewCrystal], embedder: Embedder, batch: int, tmp: Path) -> dict[str, float]:
    hook = embedded_hook(MemorySettings(), LlmSettings())
    store = await IntakeStore.open(tmp / f"b{batch}.db", embedder, on_embedded=hook)
    try:
        started = time.perf_counter()
        await store.remember_many(items)
        stored_s = time.perf_counter() - started
        started = time.perf_counter()
        embedded = await store.embed_backlog(batch_size=batch)
        embed_s = time.perf_counter() - started
    finally:
        await store.close()
    return {"store_per_s": round(len(items) / stored_s), "embed_per_s": round(embedded / embed_s, 1)}


async def measure(count: int) -> dict[str, Any]:
    embedder = make_embedder("minilm")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chat.jsonl"
        path.write_text("\n".join(messages(count)) + "\n")
        items = list(crystals_from_file(find_sources(path)[0]))
        embedder.embed_documents(["warm up the session"] * 8)
        started = time.perf_counter()
        embedder.embed_documents([c.text for c in items])
        model_alone = count / (time.perf_counter() - started)
        by_batch = {str(b): await _embed_rate(items, embedder, b, Path(tmp)) for b in BATCHES}
    default, earlier = by_batch[str(BATCHES[0])], by_batch[str(BATCHES[1])]
    return {
        "messages": count,
        "store_per_s": default["store_per_s"],
        "embed_per_s": default["embed_per_s"],
        "baseline_embed_per_s_batch_16": earlier["embed_per_s"],
        "model_alone_texts_per_s": round(model_alone, 1),
        "by_batch": by_batch,
        "minutes_to_embed_50k_in_the_background": round(50_000 / default["embed_per_s"] / 60, 1),
        "goal_per_s": GOAL_PER_S,
        "goal_met_by_rate": default["embed_per_s"] >= GOAL_PER_S,
    }


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(measure(300 if quick else 2_000))
