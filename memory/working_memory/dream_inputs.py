"""What a dream reads (``memory.working_memory.dream``): the live crystals it may put in a prompt,
by section, the person's directives, Active Context as the last dream left it, the lines of facts
superseded since, and a scratch note for each hormone that became high."""

from __future__ import annotations

import json
from typing import Any

from ground import failpoints
from ground.authority import Capability, Speaker, may
from ground.clock import iso_utc
from memory.dynamics.hormones import notable
from memory.governance.prompt_gate import Route, admits_sql
from memory.model import Crystal, Hormones
from memory.storage.rows import SELECT_COLUMNS, crystal_from_row
from memory.storage.store import MemoryStore
from memory.working_memory.memory_md import WorkingMemory, WorkingMemoryFiles
from memory.working_memory.synthesis import (
    SECTION_CAPS,
    DreamInput,
    one_line,
)

REPLAY_PER_DREAM = 10

#: Active Context as the last dream left it: [bullet, sessions lived, importance] (synthesis.active_ledger).
ACTIVE_LEDGER_KEY = "active_context_ledger"

#: The hormones that were high at the last dream (a level's note is written once while it lasts).
HIGH_HORMONES_KEY = "high_hormones_noted"

# What the gate keeps out of a dream prompt (held, confidential), and outdated facts.
_LIVE = (
    "c.lifecycle IN ('generated', 'activated', 'consolidated', 'frozen') "
    f"AND {admits_sql(Route.DREAM_PROMPT)} AND c.superseded_by IS NULL"
)


async def _select(
    store: MemoryStore, where: str, params: dict[str, Any], order: str, limit: int
) -> tuple[Crystal, ...]:
    async with store.reader().execute(
        # ``where`` in parentheses: a caller's OR must never escape the live filter.
        f"SELECT {SELECT_COLUMNS} FROM crystals c WHERE {_LIVE} AND ({where}) ORDER BY {order} LIMIT {int(limit)}",
        params,
    ) as cursor:
        return tuple(crystal_from_row(r) for r in await cursor.fetchall())


async def directives(store: MemoryStore, limit: int = 20) -> list[str]:
    """The person's directives for the bootstrap text: their explicit instructions and preferences,
    pinned and most important first (nothing held in quarantine, nothing confidential)."""
    found = await _select(
        store,
        # Twice sure: the layer, and a speaker the authority table lets direct (a row that reached the
        # layer some other way, an old import, still never tops the prompt).
        "c.epistemic_layer = 'directive' AND c.speaker IN ("
        + ", ".join(f"'{s.value}'" for s in Speaker if may(s, Capability.DIRECT))
        + ")",
        {},
        "(c.lifespan = 'permanent') DESC, max(c.importance, c.importance_floor) DESC, c.stored_at_ms DESC",
        limit,
    )
    return [one_line(c.text) for c in found]


async def gather(
    store: MemoryStore, previous: WorkingMemory, since_ms: int, levels: Hormones, notes: tuple[Any, ...]
) -> DreamInput:
    now = store.now_ms()
    by_weight = "c.importance DESC, c.access_count DESC, c.stored_at_ms DESC"
    return DreamInput(
        previous=previous,
        notes=notes,
        new_crystals=await _select(
            store, "c.stored_at_ms > :since AND c.origin != 'dream'", {"since": since_ms}, by_weight, 12
        ),
        profile=await _select(
            store, "c.semantic_type = 'insight' OR c.origin IN ('dream', 'inferred')", {}, by_weight, 10
        ),
        bonds=await _select(
            store,
            "c.epistemic_layer = 'directive' OR c.semantic_type IN ('preference', 'relationship')",
            {},
            "(c.epistemic_layer = 'directive') DESC, " + by_weight,
            SECTION_CAPS["Bond"],
        ),
        niche=await _select(
            store, "c.semantic_type = 'skill' AND c.scope != 'private' AND c.origin != 'peer'", {}, by_weight, 6
        ),
        replayed=await _select(
            store,
            "c.id IN (SELECT crystal_id FROM replay_queue WHERE due_ms <= :now)",
            {"now": now},
            by_weight,
            REPLAY_PER_DREAM,
        ),
        curiosity=await _select(store, "c.semantic_type = 'goal'", {}, by_weight, 8),  # gaps come first (gaps=)
        emerging_skills=await _select(
            store,
            "(c.semantic_type = 'task_pattern' AND c.access_count >= 2) "
            "OR (c.semantic_type = 'skill' AND c.stored_at_ms > :since)",
            {"since": since_ms},
            by_weight,
            8,
        ),
        hormones=levels,
        now_iso=iso_utc(now),
        gaps=tuple(await store.curiosity.gap_lines(SECTION_CAPS["Curiosity Gaps"])) if store.curiosity else (),
        carried=await _carried(store, previous),
        outdated=await _outdated(store, since_ms),
    )


#: Superseded crystals whose lines a dream takes out of MEMORY.md, at most (the most recent first).
MAX_OUTDATED = 500


async def _outdated(store: MemoryStore, since_ms: int) -> tuple[str, ...]:
    """The lines of crystals superseded since the last dream: whatever section kept them, they go."""
    async with store.reader().execute(
        "SELECT text FROM crystals WHERE superseded_by IS NOT NULL AND updated_at_ms > ? "
        "ORDER BY updated_at_ms DESC LIMIT ?",
        (since_ms, MAX_OUTDATED),
    ) as cursor:
        return tuple(one_line(r[0]) for r in await cursor.fetchall())


async def _carried(store: MemoryStore, previous: WorkingMemory) -> tuple[tuple[str, int, float], ...]:
    """Active Context as the last dream left it, with each item's age and importance (an item the
    ledger does not know, from a file an earlier release wrote, starts at age 0 and 0.5)."""
    try:
        ledger = {
            str(b).casefold(): (int(a), float(i))
            for b, a, i in json.loads(await store.get_meta(ACTIVE_LEDGER_KEY) or "[]")
        }
    except (ValueError, TypeError):
        ledger = {}
    return tuple((b, *ledger.get(b.casefold(), (0, 0.5))) for b in previous.bullets("Active Context"))


async def note_new_highs(store: MemoryStore, files: WorkingMemoryFiles, levels: Hormones, now: int) -> tuple[str, ...]:
    """A scratch note for each hormone that became high since the last dream: once while it stays high
    (a level that stayed up for ten dreams wrote ten notes, and they crowded Active Context)."""
    high = dict(notable(levels))
    try:
        already = set(json.loads(await store.get_meta(HIGH_HORMONES_KEY) or "[]"))
    except (ValueError, TypeError):
        already = set()
    # A note a cycle cut off (before it recorded the level as noted) left in scratch counts too: the
    # retry, at another time, wrote a second note of other words, so a second crystal.
    pending = {name for name in high for n in files.scratch.read().notes if n.text.startswith(f"{name} was high (")}
    notes = tuple(
        files.scratch.append(f"{name} was high ({value:.2f}) at the dream of {iso_utc(now)}", 0.7, now).text
        for name, value in high.items()
        if name not in already | pending
    )
    failpoints.check("dream:hormone-noted")  # noted in scratch, not yet recorded as noted
    if set(high) != already:
        await store.set_meta(HIGH_HORMONES_KEY, json.dumps(sorted(high)))
    return notes
