"""Imports from other tools at the sizes issue 30 names: an Obsidian vault of 10,000 notes and a Mem0
export of 50,000 memories (1,000 and 5,000 with ``--quick``), written here from templates (no
person's data). Each is read, then stored without embedding (the daemon embeds in the background;
``bench importing`` measures embedding), first stopped halfway and then run again whole, as after a
Ctrl-C: the second run must store only the rest and no text twice.

``entries_per_s`` is the entries over the time of both runs (the stopped half, then the whole).
Baseline, same run: the same vault imported as plain markdown files (``memory import`` of a folder
without ``.obsidian/``: no tags, links or times).
Goal (issue 30): both complete with progress shown, and a stopped import resumes without duplicates.
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
from memory.importer import crystals_from_file, find_sources
from memory.intake.store import IntakeStore
from memory.storage.counts import crystal_total
from memory.transfer.foreign import ForeignSource, store_entries
from memory.transfer.foreign_files import read_foreign

TOPICS = ("boiler", "garden", "tax return", "bike", "kitchen", "server", "piano", "allotment", "car", "roof")
VERBS = ("checked", "fixed", "booked", "paid for", "cleaned", "replaced", "asked about", "planned", "moved", "sold")


def write_vault(root: Path, notes: int, rng: random.Random) -> Path:
    vault = root / "vault"
    (vault / ".obsidian").mkdir(parents=True)
    for n in range(notes):
        topic, verb = rng.choice(TOPICS), rng.choice(VERBS)
        folder = vault / f"area-{n % 20}"
        folder.mkdir(exist_ok=True)
        link = f"[[note {rng.randrange(notes)}]]" if n else ""
        (folder / f"note {n}.md").write_text(
            f"---\ntags: [{topic.replace(' ', '-')}, log]\ncreated: 2024-{1 + n % 12:02d}-{1 + n % 28:02d}\n---\n"
            f"# {topic.title()} {n}\nOn day {n} I {verb} the {topic} ({rng.randrange(10_000)} units). #home {link}\n\n"
            f"Next step for the {topic}: call back on {1 + n % 28} {('May', 'June', 'July')[n % 3]}.\n"
        )
    return vault


def write_mem0(root: Path, memories: int, rng: random.Random) -> Path:
    results = [
        {
            "id": f"m-{n}",
            "memory": f"The user {rng.choice(VERBS)} the {rng.choice(TOPICS)} on occasion {n}",
            "created_at": f"2024-{1 + n % 12:02d}-{1 + n % 28:02d}T10:00:00Z",
            "categories": [rng.choice(("home", "work", "money"))],
            "user_id": "alex",
        }
        for n in range(memories)
    ]
    path = root / "mem0.json"
    path.write_text(json.dumps({"results": results}))
    return path


def _half(source: ForeignSource) -> ForeignSource:
    return ForeignSource(source.kind, source.entries[: len(source.entries) // 2], [], [], source.aliases)


async def _import(db: Path, read: Any) -> dict[str, Any]:
    """Read, store the first half (then stop, as after Ctrl-C), then the whole again."""
    started = time.perf_counter()
    source = await asyncio.to_thread(read)
    read_s = time.perf_counter() - started
    store = await IntakeStore.open(db, make_embedder("hashing"))
    try:
        steps: list[int] = []
        started = time.perf_counter()
        first = await store_entries(store, _half(source), steps.append)
        again = await store_entries(store, source, steps.append)
        store_s = time.perf_counter() - started
        stored = await crystal_total(store.reader())
    finally:
        await store.close()
    entries = len(source.entries)
    return {
        "entries": entries,
        "read_s": round(read_s, 2),
        "store_s": round(store_s, 2),
        "entries_per_s": round(entries / store_s),
        "progress_steps": len(steps),
        "stopped_after": first.stored,
        "resumed_stored": again.stored,
        "resumed_already_known": again.known,
        "links": first.links + again.links,
        "crystals": stored,
        "no_duplicates": stored == first.stored + again.stored and again.known == first.stored,
    }


async def _plain_markdown(db: Path, folder: Path) -> dict[str, Any]:
    started = time.perf_counter()
    store = await IntakeStore.open(db, make_embedder("hashing"))
    try:
        items = [c for s in find_sources(folder) for c in crystals_from_file(s)]
        result = await store.remember_many(items)
    finally:
        await store.close()
    seconds = time.perf_counter() - started
    return {
        "entries": len(items),
        "s": round(seconds, 2),
        "entries_per_s": round(len(items) / seconds),
        "created": result.created,
    }


async def evaluate(notes: int, memories: int) -> dict[str, Any]:
    rng = random.Random(30)
    with tempfile.TemporaryDirectory(prefix="bench-foreign-") as tmp:
        root = Path(tmp)
        vault = write_vault(root, notes, rng)
        mem0 = write_mem0(root, memories, rng)
        obsidian = await _import(root / "vault.db", lambda: read_foreign(vault, None))
        from_mem0 = await _import(root / "mem0.db", lambda: read_foreign(mem0, None))
        (vault / ".obsidian" / "app.json").unlink(missing_ok=True)
        (vault / ".obsidian").rmdir()
        baseline = await _plain_markdown(root / "plain.db", vault)
    return {
        "obsidian_vault": {"notes": notes, **obsidian},
        "mem0_export": {"memories": memories, **from_mem0},
        "baseline": {"what": "the same vault as plain markdown files (memory import, same run)", **baseline},
        "goal": "complete with progress shown; a stopped import resumes without duplicates",
        "goal_met": obsidian["no_duplicates"] and from_mem0["no_duplicates"],
    }


def run(quick: bool) -> dict[str, Any]:
    return asyncio.run(evaluate(1_000 if quick else 10_000, 5_000 if quick else 50_000))
