"""The search-time ordering: among what one question finds, a later statement that may update an
earlier one goes just above it. Nothing is hidden; ``explain`` names the hit it went ahead of.

Two ways a later statement takes part:
- it is a hit of the question itself (``newer_first``): the question names what the two share, so
  a verb of change needs no shared word (``memory.supersession.judge.may_update``);
- it was linked on save as one that may update a hit (an ``updates`` association from
  ``memory.supersession.detect``) but the question did not find it ("Closed the Sabadell account,
  everything is at ING now" for "Which bank do we use?"): ``place_later_updates`` brings it in
  above that hit, judged again without the question's help.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import aiosqlite
import numpy as np

from memory.embedders.base import cosine
from memory.model import Crystal
from memory.retrieval.query import SearchRequest
from memory.storage.store import MemoryStore
from memory.supersession.authority import other_voice, several_voices
from memory.supersession.judge import asks_for_the_older, may_be_outdated, may_update, values_asked


@dataclass(slots=True)
class Scored:
    """A hit while it is ranked: its final score and the factors that made it."""

    final: float
    rowid: int
    crystal: Crystal
    rrf: float
    importance: float
    recency: float
    in_place_of: str | None = None
    superseded_factor: float = 1.0
    ahead_of: str | None = None
    time: float = 1.0
    bounty: float = 1.0  # what its bounty's priority boost multiplied its score by (``bounty_rank``)


def _may_go_ahead(earlier: Crystal, later: Crystal, asked: frozenset[str]) -> bool:
    """Whether ``later`` may be weighed as an update of ``earlier`` at all: said after it, not
    marked wrong itself, ``earlier`` a statement that can go out of date, and the question not
    naming a value only ``earlier`` says; and both one person's words (``supersession.authority``)."""
    if (earlier.created_at_ms, earlier.id) >= (later.created_at_ms, later.id) or later.steering_reward < 0:
        return False
    # one person's words update only their own; a passage of two people's words, whose change of
    # what cannot be told, updates nothing and is updated by nothing (issue 52: such passages went
    # ahead of the answer to 6 of the top 10 of "Where did the group end up staying?")
    if other_voice(earlier, later) or several_voices(earlier) or several_voices(later):
        return False
    if asked and asks_for_the_older(asked, earlier.text, later.text):
        return False
    return may_be_outdated(earlier, later.text)


async def newer_first(store: MemoryStore, scored: list[Scored], request: SearchRequest) -> None:
    """Among the hits shown, a later one that may be the update of an earlier-said one ranked above
    it moves just above it, with that one's score."""
    top = scored[: request.limit]
    if len(top) < 2:
        return
    vectors = await store.vectors.vectors_of(store.reader(), [entry.rowid for entry in top])
    asked = values_asked(request.query) if request.query else frozenset()
    for j in range(1, len(top)):
        later = top[j]
        for i in range(j):
            earlier = top[i]
            if not _may_go_ahead(earlier.crystal, later.crystal, asked):
                continue
            if may_update(earlier.crystal.text, later.crystal.text, _cosine(vectors, earlier.rowid, later.rowid)):
                later.final = math.nextafter(earlier.final, math.inf)
                later.ahead_of = earlier.crystal.id
                top.insert(i, top.pop(j))
                break
    scored[: len(top)] = top


def _cosine(vectors: dict[int, np.ndarray], a: int, b: int) -> float:
    va, vb = vectors.get(a), vectors.get(b)
    return cosine(va, vb) if va is not None and vb is not None else 0.0


#: Later statements linked to the hits shown that are looked at, at most (the links are indexed by
#: their target; a statement with a verb of change links to a few of its neighbours at most).
MAX_LATER_UPDATES = 20


async def later_updates(db: aiosqlite.Connection, ids: Sequence[str]) -> list[tuple[str, str, float]]:
    """(later id, hit id, similarity) of each ``updates`` link into ``ids``, the latest first."""
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    async with db.execute(
        f"SELECT src_id, dst_id, weight FROM associations WHERE type = 'updates' AND dst_id IN ({marks}) "
        "ORDER BY created_ms DESC LIMIT ?",
        (*ids, MAX_LATER_UPDATES),
    ) as cursor:
        return [(str(r[0]), str(r[1]), float(r[2])) for r in await cursor.fetchall()]


def place_later_updates(
    scored: list[Scored],
    candidates: dict[str, Scored],
    links: Sequence[tuple[str, str, float]],
    request: SearchRequest,
) -> list[Scored]:
    """``scored`` with each of ``candidates`` (later statements the question did not find, visible
    to it) placed just above the first hit shown it may update; the others left out."""
    top = scored[: request.limit]
    position = {entry.crystal.id: i for i, entry in enumerate(top)}
    asked = values_asked(request.query) if request.query else frozenset()
    placed: dict[str, tuple[int, Scored]] = {}
    for later_id, hit_id, similarity in links:
        later, at = candidates.get(later_id), position.get(hit_id)
        if later is None or at is None:
            continue
        earlier = top[at].crystal
        if later_id in placed and placed[later_id][0] <= at:
            continue  # already going ahead of a better hit
        if _may_go_ahead(earlier, later.crystal, asked) and may_update(
            earlier.text, later.crystal.text, similarity, asked_together=False
        ):
            placed[later_id] = (at, later)
    if not placed:
        return scored
    out = list(scored)
    for at, entry in sorted(placed.values(), key=lambda p: -p[0]):  # from the bottom: positions hold
        entry.final = math.nextafter(out[at].final, math.inf)
        entry.ahead_of = out[at].crystal.id
        out.insert(at, entry)
    return out
