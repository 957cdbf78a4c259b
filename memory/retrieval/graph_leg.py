"""The graph leg of a hybrid search: the crystals that name the entities a question names
(``memory.entities``), and the crystals one hop away: those naming an entity the best hits of the
other legs name and the question does not (asked for "the profession of the friend who pushed for
Slovenia", the hit "Priya basically campaigned for it" names Priya, and Priya's crystals hold "vet
school").

A question's entities are what ``memory.entities.recognise`` finds in it, and every known entity or
alias whose key is one of its words or runs of two or three ("caroline" asked in lower case). An
alias reaches its entity both ways: "Caroline's sister" finds what was said of Ana, once a crystal
said "my sister Ana".

Each crystal scores the rarity (idf) of each question entity it names, and half that of each entity
one hop away: a crystal naming two of the question's entities outranks one naming one. An entity
named by more than ``COMMON_SHARE`` of memory (the two speakers of a chat) is not followed: it tells
nothing apart. Ties go to the crystals the other legs ranked higher. Every read is capped
(``MAX_PER_ENTITY``, ``HOP_ENTITIES``), so the leg's cost does not grow with the store.

Measured on conversations written apart (``python -m bench capture``, the tuned split only, MiniLM):
following the entities around the question itself as a hop (the entities most named beside the
question's) cost recall (0.831 -> 0.815 on apart_dev; LoCoMo tuned 0.835 -> 0.826); the hop from
the best hits' entities, weight 0.5, is what stands (0.836; 0.835, multi-hop 0.500 -> 0.528); weight
1.0 was worse on LoCoMo (0.823).
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import aiosqlite

from memory.entities.recognise import entity_key, is_common_word, mentions
from memory.storage.connection import select_in

#: Crystals read per entity of the question, the newest first, and per entity one hop away: a name on
#: more crystals is worth little anyway (its idf is low), and each read costs the search its time.
MAX_PER_ENTITY = 1_000
MAX_PER_HOP_ENTITY = 200
#: Entities one hop away that are followed, the most co-named first.
HOP_ENTITIES = 8
#: A hop's entity counts this share of a question entity.
HOP_SHARE = 0.5
MAX_QUESTION_KEYS = 200
#: An entity named by more than this share of crystals is not followed.
COMMON_SHARE = 0.2
#: The other legs' best hits whose entities are followed one hop.
BRIDGE_FROM = 3
_WORD = re.compile(r"[a-z0-9\u00e0-\u024f][a-z0-9\u00e0-\u024f'\-]*")

Allowed = Callable[[list[int]], Awaitable[set[int]]]


def question_keys(query: str) -> list[str]:
    """The keys a question may name an entity by: its mentions, and its words and runs of two or
    three (not a common word alone)."""
    keys = dict.fromkeys(m.key for m in mentions(query))
    words = _WORD.findall(query.lower().replace("\u2019", "'"))
    words = [re.sub(r"'s$", "", w) for w in words]
    for size in (1, 2, 3):
        for start in range(len(words) - size + 1):
            run = words[start : start + size]
            if size == 1 and (is_common_word(run[0]) or len(run[0]) < 3):
                continue
            keys.setdefault(entity_key(" ".join(run)), None)
    return list(keys)[:MAX_QUESTION_KEYS]


async def question_entities(db: aiosqlite.Connection, query: str) -> dict[int, int]:
    """The entities ``query`` names (directly or by an alias), with how many crystals name each."""
    keys = question_keys(query)
    if not keys:
        return {}
    rows = await select_in(
        db,
        "SELECT id, mentions FROM entities WHERE key IN ({marks}) UNION "
        "SELECT e.id, e.mentions FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
        "WHERE a.alias_key IN ({marks})",
        keys,
        repeat=2,
    )
    return {int(r[0]): int(r[1]) for r in rows}


@dataclass(frozen=True, slots=True)
class Named:
    """What the question itself names: its entities, and the crystals naming them with their scores."""

    total: int  # crystals in memory (an upper bound)
    asked: frozenset[int]
    scores: dict[int, float]


async def named_by_question(db: aiosqlite.Connection, query: str) -> Named:
    """The first half of the leg, which needs only the question: it runs beside the other legs."""
    total = await _crystal_count(db)
    common = COMMON_SHARE * total  # named nearly everywhere (a chat's two speakers): tells nothing apart
    asked = await question_entities(db, query)
    weights = {e: _idf(total, n) for e, n in asked.items() if 0 < n <= common}
    scores: dict[int, float] = {}
    for entity, rowid in await _crystals_of(db, list(weights), MAX_PER_ENTITY):
        scores[rowid] = scores.get(rowid, 0.0) + weights[entity]
    return Named(total, frozenset(asked), scores)


async def graph_leg(
    db: aiosqlite.Connection, named: Named, allowed: Allowed, limit: int, prior: Mapping[int, float]
) -> list[tuple[int, float]]:
    """The crystals of the question's entities (``named``) and of the entities one hop away, best
    first: (rowid, score). ``prior``: the other legs' fused scores."""
    scores = dict(named.scores)
    best_so_far = heapq.nsmallest(BRIDGE_FROM, prior, key=lambda r: (-prior[r], r))
    bridges = await _bridges(db, set(named.asked), best_so_far, named.total)
    for entity, rowid in await _crystals_of(db, list(bridges), MAX_PER_HOP_ENTITY):
        scores[rowid] = scores.get(rowid, 0.0) + HOP_SHARE * bridges[entity]
    if not scores:
        return []
    best = heapq.nsmallest(limit * 4, scores, key=lambda r: (-scores[r], -prior.get(r, 0.0), -r))
    kept = await allowed(best)
    return [(rowid, scores[rowid]) for rowid in best if rowid in kept][:limit]


async def _crystal_count(db: aiosqlite.Connection) -> int:
    async with db.execute("SELECT max(rowid) FROM crystals") as cursor:  # an upper bound, read at once
        row = await cursor.fetchone()
    return int(row[0] or 1) if row else 1


async def _crystals_of(db: aiosqlite.Connection, entities: list[int], cap: int) -> list[tuple[int, int]]:
    """(entity, crystal rowid) of the newest ``cap`` crystals naming each of ``entities``, in one read
    (each part walks the index from its newest end: a name on 10,000 crystals costs ``cap`` rows)."""
    if not entities:
        return []
    part = "SELECT * FROM (SELECT entity_id, crystal_rowid FROM crystal_entities WHERE entity_id = ? "
    part += "ORDER BY crystal_rowid DESC LIMIT ?)"
    async with db.execute(" UNION ALL ".join([part] * len(entities)), [v for e in entities for v in (e, cap)]) as c:
        return [(int(r[0]), int(r[1])) for r in await c.fetchall()]


async def _bridges(db: aiosqlite.Connection, asked: set[int], rowids: list[int], total: int) -> dict[int, float]:
    """The entities the best hits so far name that the question does not (the friend a hit names,
    whose job the question asks), the rarest first, with their idf weight."""
    if not rowids:
        return {}
    marks = ", ".join("?" * len(rowids))
    async with db.execute(
        "SELECT DISTINCT e.id, e.mentions FROM crystal_entities ce JOIN entities e ON e.id = ce.entity_id "
        f"WHERE ce.crystal_rowid IN ({marks})",
        rowids,
    ) as cursor:
        named = {int(r[0]): int(r[1]) for r in await cursor.fetchall()}
    weights = {e: _idf(total, n) for e, n in named.items() if e not in asked and 0 < n <= COMMON_SHARE * total}
    return dict(sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:HOP_ENTITIES])


def _idf(total: int, count: int) -> float:
    return math.log(1.0 + total / max(1, count))
