"""Curiosity: what memory could not answer, and how much a new crystal adds.

- **Gaps.** A search (by a caller, with words) whose hits all fall below the relevance floor
  returns nothing and records a curiosity gap: its content words, the latest wording, how often it
  was asked, when first and last. Gaps are capped (``max_open``: the least asked, then the oldest,
  make room) and feed MEMORY.md's Curiosity Gaps section, the API and MCP.
- **Assessment at ingest.** A new crystal is scored on novelty (1 - its cosine similarity to the
  nearest crystal already stored) and on whether it fills an open gap (it holds every content word
  of one). The reward ``0.5 novelty + 0.5 filled`` above ``BOOST_THRESHOLD`` becomes its
  ``curiosity_boost`` (the reward itself), which importance multiplies in (1 + boost:
  ``memory.dynamics.importance``). A filled gap is closed, naming the crystal that filled it.

Bulk imports are history, not news: they close gaps they fill but get no boost (no vectors yet).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ground.authority import Speaker
from memory.cognition.typing import stem
from memory.embedders.base import Vectors
from memory.fts import fts_terms
from memory.governance.injection import instruction_flags
from memory.governance.prompt_gate import Passage, Route, decide
from memory.governance.rules import classify_sensitivity
from memory.model import NewCrystal, Sensitivity
from memory.storage.store import MemoryStore

#: A composite reward above this becomes the crystal's boost.
BOOST_THRESHOLD = 0.4
#: Open gaps kept by default (``[memory] max_curiosity_gaps``).
MAX_OPEN_GAPS = 200
#: How a gap's line in MEMORY.md starts (the dream replaces these lines with the open gaps of the day).
GAP_LINE_PREFIX = "Unanswered:"
#: A gap key is at most this many content words (the rest of a long question adds nothing).
MAX_GAP_TERMS = 12


def gap_terms(text: str) -> frozenset[str]:
    """The stemmed content words a gap is keyed by, or that a crystal must hold to fill one."""
    return frozenset(stem(t) for t in fts_terms(text))


def gap_key(query: str) -> str | None:
    terms = sorted(gap_terms(query))[:MAX_GAP_TERMS]
    return " ".join(terms) if terms else None


@dataclass(frozen=True, slots=True)
class Gap:
    key: str
    query: str  # its latest wording
    asked: int
    first_ms: int
    last_ms: int
    closed_ms: int | None = None
    closed_by: str | None = None


class Curiosity:
    """Create with ``await Curiosity.attach(store)``: the store asks it at ingest, search records gaps."""

    def __init__(self, store: MemoryStore, max_open: int) -> None:
        self._store = store
        self.max_open = max_open
        self._open: dict[str, frozenset[str]] = {}  # key -> its terms, for the fill check

    @classmethod
    async def attach(cls, store: MemoryStore, *, max_open: int = MAX_OPEN_GAPS) -> Curiosity:
        curiosity = cls(store, max_open)
        for gap in await curiosity.gaps(limit=max_open):
            curiosity._open[gap.key] = frozenset(gap.key.split())
        store.curiosity = curiosity
        return curiosity

    async def record_gap(self, query: str) -> Gap | None:
        """A search found nothing relevant for ``query``: open its gap, or count it again."""
        key = gap_key(query)
        if key is None:
            return None
        now = self._store.now_ms()
        async with self._store.transaction() as db:
            await db.execute(
                "INSERT INTO curiosity_gaps (key, query, asked, first_ms, last_ms) VALUES (?, ?, 1, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET asked = asked + 1, last_ms = excluded.last_ms, query = excluded.query, "
                "closed_ms = NULL, closed_by = NULL",
                (key, query[:500], now, now),
            )
            # Bounded: past ``max_open`` open gaps, the least asked and then the oldest make room.
            await db.execute(
                "DELETE FROM curiosity_gaps WHERE closed_ms IS NULL AND key IN (SELECT key FROM curiosity_gaps "
                "WHERE closed_ms IS NULL ORDER BY asked DESC, last_ms DESC LIMIT -1 OFFSET ?)",
                (self.max_open,),
            )
        still_open = await self.gaps(limit=self.max_open)
        self._open = {g.key: frozenset(g.key.split()) for g in still_open}
        return next((g for g in still_open if g.key == key), None)

    async def gaps(self, *, limit: int = 50, closed: bool = False) -> list[Gap]:
        """Open gaps, most asked first (or the closed ones, latest first)."""
        where, order = ("closed_ms IS NOT NULL", "closed_ms DESC") if closed else ("closed_ms IS NULL", "asked DESC")
        async with self._store.reader().execute(
            f"SELECT key, query, asked, first_ms, last_ms, closed_ms, closed_by FROM curiosity_gaps WHERE {where} "
            f"ORDER BY {order}, last_ms DESC LIMIT ?",
            (limit,),
        ) as cursor:
            return [Gap(*row) for row in await cursor.fetchall()]

    async def gap_lines(self, limit: int) -> list[str]:
        """The open gaps as MEMORY.md's Curiosity Gaps shows them, most asked first: each search quoted
        as what it is, someone's words (not the person's statement); a search that reads like
        instructions to the agent, or holds a secret, is left out (issue 27: any text a search was
        made with reached the prompt verbatim)."""
        return [
            f'{GAP_LINE_PREFIX} "{g.query}" (asked {g.asked}x)'
            for g in await self.gaps(limit=limit)
            if decide(
                Route.CURIOSITY_GAP, speaker=Speaker.AGENT, held=False,
                confidential=classify_sensitivity(g.query) is Sensitivity.CONFIDENTIAL,
                instructions=bool(instruction_flags(g.query)),
            ) is not Passage.NEVER
        ]  # fmt: skip

    def filled_by(self, text: str) -> list[str]:
        """Keys of the open gaps ``text`` fills (it holds every content word of the gap)."""
        if not self._open:
            return []
        words = gap_terms(text[:5_000])
        return [key for key, terms in self._open.items() if terms <= words]

    async def assess(self, new: NewCrystal, vector: Vectors | None) -> NewCrystal:
        """``new`` with its curiosity boost, unless its caller set one."""
        if new.curiosity_boost or new.quarantine is not None:
            return new
        novelty = 0.0
        if vector is not None:
            nearest = await self._store.vectors.knn(self._store.reader(), vector, 1)
            novelty = 1.0 - max(0.0, nearest[0][1]) if nearest else 1.0
        reward = 0.5 * novelty + (0.5 if self.filled_by(new.text) else 0.0)
        return replace(new, curiosity_boost=round(reward, 4)) if reward > BOOST_THRESHOLD else new

    async def on_stored(self, stored: Sequence[tuple[str, str]]) -> int:
        """Close the open gaps that the stored (crystal id, text) fill; how many were closed."""
        closing = {key: crystal_id for crystal_id, text in stored for key in self.filled_by(text)}
        if not closing:
            return 0
        now = self._store.now_ms()
        async with self._store.transaction() as db:
            await db.executemany(
                "UPDATE curiosity_gaps SET closed_ms = ?, closed_by = ? WHERE key = ? AND closed_ms IS NULL",
                [(now, crystal_id, key) for key, crystal_id in closing.items()],
            )
        for key in closing:
            self._open.pop(key, None)
        return len(closing)
