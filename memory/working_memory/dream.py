"""The dream cycle: folds scratch notes and new memories into a new MEMORY.md.

One cycle, in an order that loses nothing if the process dies at any step:
1. first activation only: a hand-written MEMORY.md is backed up, chunked into
   consolidated crystals, and kept as the text above our marker;
2. a hormone above 0.7 gets a scratch note of its own;
3. scratch notes are indexed as crystals (dedup by content: a note already made a
   crystal by ``working_memory_note`` is not stored twice);
4. the synthesizer writes the seven sections; Active Context items that drop out
   become Crystal Pointers (a search directive, never a deletion);
5. three collapse guards may reject the rewrite: then MEMORY.md and scratch stay
   exactly as they were;
6. MEMORY.md is replaced atomically, then scratch loses the notes this cycle read
   (notes written meanwhile stay), then the replay queue advances.
A crash before 6 leaves the old MEMORY.md and the whole scratch: the next cycle
redoes the work, and dedup makes that harmless.
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ground import failpoints
from ground.authority import Speaker, weakest
from ground.clock import iso_utc
from memory.dynamics.consolidation import REPLAY_INTERVALS_DAYS
from memory.dynamics.importance import DAY_MS
from memory.fts import fts_terms
from memory.governance.rules import classify_sensitivity
from memory.intake.store import IntakeStore
from memory.model import Crystal, Hormones, NewCrystal, Origin, SemanticType, Sensitivity
from memory.storage.connection import sync_wal
from memory.storage.store import HormoneSource, MemoryStore
from memory.working_memory.dream_inputs import ACTIVE_LEDGER_KEY, gather, note_new_highs
from memory.working_memory.memory_md import SECTIONS, WorkingMemory, WorkingMemoryFiles, mood
from memory.working_memory.notes import ACTOR, seed_from_hand_written
from memory.working_memory.synthesis import (
    INSIGHTS,
    DreamInput,
    SynthesisError,
    Synthesizer,
    active_ledger,
    one_line,
)

LAST_DREAM_KEY = "last_dream_ms"
REPORT_KEY = "last_dream_report"
# The design's three collapse guards (validateWorkingMemory).
MASS_DROP_MIN_CHARS = 2_000  # a previous state at least this long is mature enough to judge a drop by
MASS_DROP_RATIO = 0.5  # the new state keeps at least half of a mature one's length
MAX_POINTERS = 20  # more Crystal Pointers than this: the rewrite evicted active topics wholesale
MIN_SUBSTANCE_CHARS = 50  # every heading there but less text than this under them: an empty synthesis

_log = logging.getLogger("memory.dream")


@dataclass(frozen=True)
class DreamReport:
    at_ms: int
    synthesizer: str
    accepted: bool
    rejected_because: str | None
    notes_indexed: int
    auto_notes: tuple[str, ...]
    pointers_added: int
    replayed: int
    seeded_chunks: int
    insights: int = 0  # insight crystals the synthesizer drew, stored with their sources
    bullets: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def collapse_reason(old: WorkingMemory, new: WorkingMemory, material_chars: int = MIN_SUBSTANCE_CHARS) -> str | None:
    """Why ``new`` must not replace ``old`` (the design's three guards), or None when it may.

    ``material_chars``: how much text the synthesis had to work from (the old state's bullets, the
    notes and new crystals). The design rejects under 50 characters of substance; we do so only
    when there was at least that much to say, so a first dream on one short note is not refused."""
    substance = sum(len(b) for _, b in new.all_bullets())
    if substance < min(MIN_SUBSTANCE_CHARS, material_chars):
        return f"empty synthesis: {substance} characters under the headings (fewer than {MIN_SUBSTANCE_CHARS})"
    old_chars, new_chars = len(old.managed_text()), len(new.managed_text())
    if old.all_bullets() and old_chars > MASS_DROP_MIN_CHARS and new_chars < MASS_DROP_RATIO * old_chars:
        return f"mass drop: the new state is {new_chars} characters, under half of the previous {old_chars}"
    pointers = len(new.bullets("Crystal Pointers"))
    if pointers > MAX_POINTERS:
        return f"eviction runaway: {pointers} crystal pointers (more than {MAX_POINTERS})"
    return None


def pointer_for(bullet: str) -> str:
    """A one-line search directive standing in for a topic that left Active Context."""
    terms = list(dict.fromkeys(fts_terms(bullet)))[:5]
    query = " ".join(terms) if terms else one_line(bullet, 40)
    return f'{one_line(bullet, 80)} → memory_search "{query}"'


async def dream(
    store: IntakeStore,
    files: WorkingMemoryFiles,
    synthesizer: Synthesizer,
    *,
    hormones: HormoneSource | None = None,
    world: tuple[str, ...] = (),
    emerging: tuple[str, ...] = (),
) -> DreamReport:
    """``world``: lines about the person's world from other parts of the node (the marketplace
    ledger), placed in Niche, each replacing its predecessor with the same prefix. ``emerging``: the
    emerging skills' lines (``memory.emerging``: the node counts their executions), for Emerging Skills."""
    started = time.perf_counter()
    now = store.now_ms()
    seeded = await seed_from_hand_written(store, files)
    levels = hormones.levels() if hormones is not None else Hormones()
    auto_notes = await note_new_highs(store, files, levels, now)
    snapshot = files.scratch.read()
    previous = files.load()
    since = int(await store.get_meta(LAST_DREAM_KEY) or 0)
    # Index first: once a note is a crystal it is searchable whatever happens to this cycle.
    for note in snapshot.notes:
        await store.remember(
            NewCrystal(
                note.text,
                origin=Origin.SESSION,
                importance=note.importance,
                source="scratch",
                actor=ACTOR,
                speaker=Speaker.AGENT,  # the scratch file is the agent's; a person's note was stored when made
            )
        )
        failpoints.check("dream:note-indexed")  # some notes crystals, scratch still whole
    # A secret noted in scratch stays a (confidential) crystal; it never goes into MEMORY.md, the
    # bootstrap text or a chat endpoint's prompt.
    shown = tuple(n for n in snapshot.notes if classify_sensitivity(n.text) is not Sensitivity.CONFIDENTIAL)
    gathered = await gather(store, previous, since, levels, shown)
    new_session = bool(gathered.notes or gathered.new_crystals or gathered.replayed)
    dream_input = replace(gathered, world=world, emerging=emerging, new_session=new_session)

    rejected: str | None = None
    new = previous
    pointers_added = 0
    drawn: tuple[str, ...] = ()
    try:
        sections = dict(await synthesizer.synthesize(dream_input))
        drawn = tuple(sections.pop(INSIGHTS, ()))
        outdated = {line.casefold() for line in dream_input.outdated}
        sections = {
            name: tuple(b for b in bullets if b.casefold() not in outdated) for name, bullets in sections.items()
        }
    except SynthesisError as exc:
        rejected = f"synthesis failed: {exc}"
    else:
        kept = {b.casefold() for b in sections.get("Active Context", ())}
        # What left Active Context becomes a pointer, unless it left because it is outdated.
        kept_or_outdated = kept | outdated
        faded = [b for b in previous.bullets("Active Context") if b.casefold() not in kept_or_outdated]
        fresh_pointers = [pointer_for(b) for b in faded]
        # Newest pointers first. Those of earlier dreams make room past MAX_POINTERS (their crystals
        # stay searchable); pointers a synthesizer wrote itself are taken as written, and more than
        # MAX_POINTERS of them, or of fresh ones, is an eviction runaway the guard rejects.
        written = sections.get("Crystal Pointers")
        old_pointers = tuple(written) if written is not None else previous.bullets("Crystal Pointers")
        stale_pointers = {pointer_for(line).casefold() for line in dream_input.outdated}
        old_pointers = tuple(p for p in old_pointers if p.casefold() not in stale_pointers)
        known = {p.casefold() for p in old_pointers}
        fresh_pointers = [p for p in fresh_pointers if p.casefold() not in known]
        pointers_added = len(fresh_pointers)
        if written is None:
            old_pointers = old_pointers[: max(0, MAX_POINTERS - len(fresh_pointers))]
        sections["Crystal Pointers"] = tuple([*fresh_pointers, *old_pointers])
        new = WorkingMemory(
            preamble=previous.preamble,
            sections={name: tuple(sections.get(name, ())) for name in SECTIONS},
            header=f"_Last dream: {iso_utc(now)} | Mood: {mood(levels.dopamine, levels.cortisol, levels.oxytocin)}_",
        )
        said = {one_line(t).casefold() for t in (*(n.text for n in dream_input.notes), *(c.text for c in (
            *dream_input.new_crystals, *dream_input.replayed)))}  # fmt: skip
        material = sum(len(b) for _, b in previous.all_bullets()) + sum(len(t) for t in said)
        rejected = collapse_reason(previous, new, material)

    replayed = 0
    # A dream with nothing new changes nothing: not the sections, not even the header's time.
    unchanged = rejected is None and not new_session and new.sections == previous.sections and previous.managed
    insights = 0
    if rejected is None and drawn:
        insights = await _store_insights(store, drawn, dream_input)
    if rejected is None and not unchanged:
        files.write(new)
        await store.set_meta(ACTIVE_LEDGER_KEY, json.dumps(active_ledger(dream_input)))
        # The notes' crystals must be on disk before their only other copy goes: commits survive a
        # killed process at once, a power loss only once the log is synced.
        await sync_wal(store.path)
        failpoints.check("dream:before-consume")  # MEMORY.md written, scratch not yet emptied
        files.scratch.consume(snapshot)
        replayed = await _advance_replay(store, dream_input.replayed, now)
        await store.set_meta(LAST_DREAM_KEY, str(now))
    else:
        _log.warning("dream.rejected", extra={"fields": {"reason": rejected, "synthesizer": synthesizer.name}})
    report = DreamReport(
        at_ms=now,
        synthesizer=synthesizer.name,
        accepted=rejected is None,
        rejected_because=rejected,
        notes_indexed=len(snapshot.notes),
        auto_notes=auto_notes,
        pointers_added=pointers_added if rejected is None else 0,
        insights=insights,
        replayed=replayed,
        seeded_chunks=seeded,
        bullets={name: len(new.bullets(name)) for name in SECTIONS},
        duration_ms=round((time.perf_counter() - started) * 1000, 1),
    )
    await store.set_meta(REPORT_KEY, json.dumps(report.to_dict()))
    return report


_SOURCES = re.compile(r"\s*\[([0-9a-f,\s]+)\]\s*\.?$")


async def _store_insights(store: IntakeStore, lines: tuple[str, ...], material: DreamInput) -> int:
    """Store each insight as an ``insight`` crystal derived from the crystals it names. Only ids of
    crystals the dream was given count: an insight that names none is not stored (no provenance)."""
    speakers = {
        c.id: c.speaker for c in (*material.new_crystals, *material.replayed, *material.profile, *material.bonds)
    }
    known = set(speakers)
    stored = 0
    for line in lines:
        match = _SOURCES.search(line)
        sources = [i.strip() for i in match.group(1).split(",") if i.strip() in known] if match else []
        text = line[: match.start()].strip() if match else line
        if not sources or not text:
            _log.info("dream.insight_without_sources", extra={"fields": {"insight": one_line(line, 80)}})
            continue
        made = await store.remember(
            NewCrystal(
                text,
                semantic_type=SemanticType.INSIGHT,
                origin=Origin.DREAM,
                # A synthesis stands no higher than the words it came from (a quoted page stays one).
                speaker=weakest([Speaker.NODE, *(speakers[s] for s in sources)]),
                parents=tuple(sources),
                source="dream",
                actor=ACTOR,
            )
        )
        stored += int(made.created)
    return stored


async def _advance_replay(store: MemoryStore, replayed: tuple[Crystal, ...], now: int) -> int:
    """Each replayed crystal counts a dream and moves to its next interval (or leaves the queue)."""
    if not replayed:
        return 0
    ids = [c.id for c in replayed]
    async with store.transaction() as db:
        await db.executemany(
            "UPDATE crystals SET dream_count = dream_count + 1, last_dream_ms = ? WHERE id = ?",
            [(now, cid) for cid in ids],
        )
        for cid in ids:
            async with db.execute("SELECT stage FROM replay_queue WHERE crystal_id = ?", (cid,)) as cursor:
                row = await cursor.fetchone()
            stage = int(row[0]) + 1 if row else len(REPLAY_INTERVALS_DAYS)
            if stage >= len(REPLAY_INTERVALS_DAYS):
                await db.execute("DELETE FROM replay_queue WHERE crystal_id = ?", (cid,))
            else:
                await db.execute(
                    "UPDATE replay_queue SET stage = ?, due_ms = ? WHERE crystal_id = ?",
                    (stage, now + REPLAY_INTERVALS_DAYS[stage] * DAY_MS, cid),
                )
    return len(ids)
