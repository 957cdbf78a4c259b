"""What enters memory from the working-memory files other than a dream's synthesis: a hand-written
MEMORY.md seeded as crystals at the first activation, and a note the agent or the person writes
(``working_memory note``), kept both in scratch and as a crystal."""

from __future__ import annotations

import json
import logging
import time

from ground.authority import Speaker
from ground.clock import iso_utc
from memory.intake.store import IntakeStore
from memory.model import Crystal, Lifecycle, NewCrystal, Origin
from memory.storage.row_writes import write_transitions
from memory.working_memory.memory_md import WorkingMemoryFiles, chunk_words, parse

#: The actor a dream's own writes are recorded under.
ACTOR = "dream"
_log = logging.getLogger("memory.dream")
SEEDED_KEY = "working_memory_seeded"


async def seed_from_hand_written(store: IntakeStore, files: WorkingMemoryFiles) -> int:
    """Once per store: chunk a hand-written MEMORY.md into consolidated crystals and back it up.
    Returns how many chunks were stored (0 when there was nothing to seed or it already ran)."""
    if await store.get_meta(SEEDED_KEY) is not None:
        return 0
    text = files.read_text()
    now = store.now_ms()
    if not text.strip() or parse(text).managed:
        await store.set_meta(SEEDED_KEY, f"nothing to seed at {iso_utc(now)}")
        return 0
    backup = files.backup_hand_written(time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now / 1000)))
    chunks = chunk_words(text)
    result = await store.remember_many(
        [
            NewCrystal(
                chunk,
                origin=Origin.USER_INPUT,
                # An agent writes its MEMORY.md as often as a person does: the agent's notes, no orders.
                speaker=Speaker.AGENT,
                source_path=str(files.memory_md),
                source="MEMORY.md (hand-written)",
                actor=ACTOR,
            )
            for chunk in chunks
        ]
    )
    async with store.transaction() as db:
        marks = ",".join("?" * len(result.ids))
        async with db.execute(
            f"SELECT id FROM crystals WHERE lifecycle = 'generated' AND id IN ({marks})", result.ids
        ) as cursor:
            fresh = [r[0] for r in await cursor.fetchall()]
        await write_transitions(
            db,
            [
                (cid, Lifecycle.GENERATED, Lifecycle.CONSOLIDATED, "seeded from a hand-written MEMORY.md")
                for cid in fresh
            ],
            ACTOR,
            now,
        )
        await db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (SEEDED_KEY, json.dumps({"at": iso_utc(now), "chunks": len(chunks), "backup": str(backup)})),
        )
    _log.info("dream.seeded", extra={"fields": {"chunks": len(chunks), "backup": str(backup)}})
    return len(chunks)


#: A note's importance when the agent states none (the design's default for working_memory_note).
NOTE_IMPORTANCE = 0.7


async def working_memory_note(
    store: IntakeStore,
    files: WorkingMemoryFiles,
    note: str,
    importance: float | None = None,
    *,
    speaker: Speaker = Speaker.AGENT,
) -> Crystal:
    """Append a note to scratch (durably, first) and make it a searchable crystal at once. A stated
    importance is also its crystal's floor: "deadline Friday" at 0.8 is not forgotten unused."""
    written = files.scratch.append(note, NOTE_IMPORTANCE if importance is None else importance, store.now_ms())
    remembered = await store.remember(
        NewCrystal(
            written.text,
            origin=Origin.SESSION,
            importance=written.importance,
            importance_floor=written.importance if importance is not None else 0.0,
            source="scratch",
            actor="agent" if speaker is Speaker.AGENT else "cli",
            speaker=speaker,
        )
    )
    return remembered.crystal
