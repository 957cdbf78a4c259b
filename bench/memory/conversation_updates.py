"""Updates said in conversation (issue 52): each case of ``bench/data/updates_apart_*.json`` (written
apart from the code; ``check`` never tuned on) is a chat between two people, captured as a daemon
captures it (``memory.capture``, MiniLM, the daemon's steps after embedding): on day 0 one says the
old statement; on day 5 the other says a look-alike of their own (``distractor``); on day 10 the
first says the new one. All 30 chats go into one memory, a case an hour after the one before, so
each case's statements are look-alikes for the others too. Then each case's question is searched.

Reported per split:
- ``current_first``: the new statement ranked above the old (or the old not in the top 10 while the
  new is); ``stale_on_top``;
- ``updates_caught``: the old statement hidden by its own case's new one;
- ``precision``: of every crystal hidden, the share hidden by its own case's new statement (every
  other supersession in this memory is a wrong one);
- ``lookalikes_hidden``: the other person's statement hidden, or the old one hidden by it;
- ``across_voices``: supersessions between two people's words (goal: none).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from memory.capture.capture import capture
from memory.capture.formats import read_messages
from memory.embedders.base import Embedder
from memory.intake.store import IntakeStore
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.setup.settings import LlmSettings, MemorySettings
from memory.setup.store import embedded_hook

DATA = Path(__file__).parent.parent / "data"
SPLITS = {"apart_dev": DATA / "updates_apart_dev.json", "apart_check": DATA / "updates_apart_check.json"}
DAY = 86_400_000
HOUR = 3_600_000
T0 = 1_767_225_600_000  # 2026-01-01


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def _chat(case: dict[str, Any], start: int) -> list[dict[str, Any]]:
    said = [
        (case["speaker"], case["old"], 0),
        (case["distractor_speaker"], case["distractor"], 5 * DAY),
        (case["speaker"], case["new"], 10 * DAY),
    ]
    return [{"role": "user", "name": who, "content": text, "timestamp": start + at} for who, text, at in said]


async def _evaluate(cases: list[dict[str, Any]], embedder: Embedder, folder: Path) -> dict[str, Any]:
    clock = _Clock()
    settings = MemorySettings()
    store = await IntakeStore.open(
        folder / "m.db", embedder, links=settings, now_ms=clock, on_embedded=embedded_hook(settings, LlmSettings())
    )
    try:
        ids: list[dict[str, str]] = []
        for i, case in enumerate(cases):
            start = T0 + i * HOUR
            clock.now = start + 10 * DAY + HOUR
            report = await capture(store, read_messages(_chat(case, start), session=f"case-{i}"))
            by_text = {(await store.get(c)).text: c for c in report.crystal_ids}
            ids.append({role: _find(by_text, case[role]) for role in ("old", "distractor", "new")})
        clock.now = T0 + 12 * DAY
        results = []
        for case, said in zip(cases, ids, strict=True):
            hits = await search(store, SearchRequest(case["query"], mode=SearchMode.HYBRID, limit=10, touch=False))
            found = [h.crystal.id for h in hits]
            old = found.index(said["old"]) if said["old"] in found else None
            new = found.index(said["new"]) if said["new"] in found else None
            results.append({"current_first": new is not None and (old is None or new < old), "stale_on_top": old == 0})
        async with store.reader().execute(
            "SELECT o.id, n.id, o.voice, n.voice FROM crystals o JOIN crystals n ON n.id = o.superseded_by"
        ) as cursor:
            pairs = [(str(r[0]), str(r[1]), r[2], r[3]) for r in await cursor.fetchall()]
    finally:
        await store.close()
    right = {(s["old"], s["new"]) for s in ids}
    distractors = {s["distractor"] for s in ids}
    share = len(results) or 1
    return {
        "cases": len(cases),
        "current_first": round(sum(r["current_first"] for r in results) / share, 3),
        "stale_on_top": round(sum(r["stale_on_top"] for r in results) / share, 3),
        "updates_caught": round(sum((o, n) in right for o, n, *_ in pairs) / share, 3),
        "superseded": len(pairs),
        "precision": round(sum((o, n) in right for o, n, *_ in pairs) / len(pairs), 3) if pairs else None,
        "lookalikes_hidden": sum(o in distractors or n in distractors for o, n, *_ in pairs),
        "across_voices": sum(a is not None and b is not None and a != b for *_, a, b in pairs),
    }


def _find(by_text: dict[str, str], said: str) -> str:
    """The crystal holding ``said`` (a piece is the message, or the message with its speaker's name)."""
    return next(cid for text, cid in by_text.items() if said in text)


def run(embedder: Embedder, quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split, path in SPLITS.items():
        cases = json.loads(path.read_text(encoding="utf-8"))[: 8 if quick else None]
        with tempfile.TemporaryDirectory() as tmp:
            out[split] = {"set": str(path), **asyncio.run(_evaluate(cases, embedder, Path(tmp)))}
    return out
