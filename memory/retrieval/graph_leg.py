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

import math
import re
from collections.abc import Awaitable, Callable, Mapping

import aiosqlite

from memory.entities.recognise import entity_key, is_common_word, mentions
from memory.storage.connection import select_in

#: Crystals read per entity, the newest first: a name on every crystal is worth little anyway.
MAX_PER_ENTITY = 2_000
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


async def question_entities(db: aiosqlite.Connection, query: str) -> set[int]:
    keys = question_keys(query)
    if not keys:
        return set()
    named = await select_in(db, "SELECT id FROM entities WHERE key IN ({marks})", keys)
    aliased = await select_in(db, "SELECT entity_id FROM entity_aliases WHERE alias_key IN ({marks})", keys)
    return {int(r[0]) for r in named} | {int(r[0]) for r in aliased}


async def graph_leg(
    db: aiosqlite.Connection, query: str, allowed: Allowed, limit: int, prior: Mapping[int, float]
) -> list[tuple[int, float]]:
    """The crystals of the question's entities and of the entities one hop away, best first:
    (rowid, score). ``prior``: the other legs' fused scores."""
    asked = await question_entities(db, query)
    total = await _crystal_count(db)
    scores: dict[int, float] = {}
    for entity in asked:
        rowids = await _crystals_of(db, entity)
        if len(rowids) > COMMON_SHARE * total:
            continue  # named nearly everywhere (a two-person chat's speakers): it tells nothing apart
        for rowid in rowids:
            scores[rowid] = scores.get(rowid, 0.0) + _idf(total, len(rowids))
    best_so_far = sorted(prior, key=lambda r: (-prior[r], r))[:BRIDGE_FROM]
    for entity, weight in (await _bridges(db, asked, best_so_far, total)).items():
        for rowid in await _crystals_of(db, entity):
            scores[rowid] = scores.get(rowid, 0.0) + HOP_SHARE * weight
    best = sorted(scores, key=lambda r: (-scores[r], -prior.get(r, 0.0), -r))[: limit * 4]
    kept = await allowed(best)
    return [(rowid, scores[rowid]) for rowid in best if rowid in kept][:limit]


def _idf(total: int, count: int) -> float:
    return math.log(1.0 + total / max(1, count))


async def _crystal_count(db: aiosqlite.Connection) -> int:
    async with db.execute("SELECT max(rowid) FROM crystals") as cursor:  # an upper bound, read at once
        row = await cursor.fetchone()
    return int(row[0] or 1) if row else 1


async def _crystals_of(db: aiosqlite.Connection, entity: int) -> list[int]:
    async with db.execute(
        "SELECT crystal_rowid FROM crystal_entities WHERE entity_id = ? ORDER BY crystal_rowid DESC LIMIT ?",
        (entity, MAX_PER_ENTITY),
    ) as cursor:
        return [int(r[0]) for r in await cursor.fetchall()]


async def _bridges(db: aiosqlite.Connection, asked: set[int], rowids: list[int], total: int) -> dict[int, float]:
    """The entities the best hits so far name that the question does not (the friend a hit names,
    whose job the question asks), the rarest first, with their idf weight."""
    if not rowids:
        return {}
    rows = await select_in(db, "SELECT entity_id FROM crystal_entities WHERE crystal_rowid IN ({marks})", rowids)
    named = sorted({int(r[0]) for r in rows} - asked)
    if not named:
        return {}
    sizes = await select_in(
        db, "SELECT entity_id, count(*) FROM crystal_entities WHERE entity_id IN ({marks}) GROUP BY entity_id", named
    )
    weights = {int(e): _idf(total, int(n)) for e, n in sizes if int(n) <= COMMON_SHARE * total}
    return dict(sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:HOP_ENTITIES])
