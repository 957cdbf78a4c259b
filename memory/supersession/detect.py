"""Supersession in the store: found when a crystal is embedded, made or undone by hand.

When a crystal is embedded its nearest neighbours (the KNN the graph links from) and the
crystals sharing its rarest words are judged (``memory.supersession.judge``); the older one it
replaces gets ``superseded_by`` and ``superseded_ms``, an ``updates`` link from the new one, and
an attribution row naming why. Nothing is deleted: search shows the current crystal in the old
one's place (``memory.retrieval.search``), history searches still find the old, and
``unsupersede`` undoes it. A supersession the person undid is never made again.

Who may replace what (``memory.supersession.authority``): a peer's text never hides a memory of
this node, and a skill someone stated has versions of its own; skills and task patterns never
replace one another (a paraphrase joins its skill as a version: ``memory.emerging.paraphrases``).
Only the person's own words replace the person's statements, directives and pinned crystals; any
other text that would replace one only flags it "maybe outdated" (an attribution row), for the
person to review.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memory.embedders.base import Vectors, cosine
from memory.emerging.paraphrases import join_as_version
from memory.errors import InvalidValue, NotSuperseded
from memory.fts import fts_match, fts_terms
from memory.graph.links import link_neighbours, nearest
from memory.model import KNOWLEDGE_TYPES, Crystal, Lifecycle, Origin, SemanticType
from memory.storage.store import EmbeddedHook, MemoryStore
from memory.supersession.authority import may_supersede, other_voice, several_voices
from memory.supersession.judge import (
    INFERRED,
    Candidate,
    Verdict,
    choose,
    is_statement,
    may_be_outdated,
    may_update,
)
from memory.supersession.phrasing import change_cue, negated_stems

ACTOR = "supersession"
#: Crystals sharing the new one's words that are judged beside its nearest neighbours: an old
#: statement can be far in meaning ("Tomas lives in Riga" / "Actually, Tomas is in Tallinn").
KEYWORD_CANDIDATES = 10
#: Words of the new text searched for those: the first content words, enough for its subject.
KEYWORD_TERMS = 12


class PairJudge(Protocol):
    """A second opinion for ambiguous choices (``memory.supersession.llm_judge.LlmJudge``)."""

    async def pick(self, new: str, candidates: Sequence[Candidate]) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Supersession:
    """Made when a crystal is embedded: ``after_embedding`` is the store's embedded hook."""

    judge: PairJudge | None = None

    def hook(self) -> EmbeddedHook:
        async def after_embedding(store: MemoryStore, crystal_id: str, vector: Vectors) -> int:
            neighbours = await nearest(store, vector)
            links = await link_neighbours(store, crystal_id, neighbours)
            await self.detect(store, crystal_id, vector, neighbours)
            await join_as_version(store, crystal_id, neighbours)  # a skill said again is a version of it
            return links

        return after_embedding

    async def detect(
        self, store: MemoryStore, crystal_id: str, vector: Vectors, neighbours: Sequence[tuple[int, float]]
    ) -> Verdict | None:
        """Judge ``crystal_id`` against the crystals around it; mark what it replaces (or, for a
        crystal imported after a newer one, what replaces it). Returns the verdict made."""
        new = await store.get(crystal_id)
        if not _may_take_part(new) or not is_statement(new.text):
            return None  # a passage (a conversation turn) is judged by nothing: it states too much at once
        near = {rowid: similarity for rowid, similarity in neighbours}
        crystals = await store.get_many_by_rowid(list(near))
        extra: list[int] = []
        if _may_replace_something(new.text):
            extra = [r for r in await _sharing_words(store, new.text) if r not in near]
            crystals.update(await store.get_many_by_rowid(extra))
        similarities = await _similarities(store, vector, extra, near)
        undone = await _undone(store, [c.id for c in crystals.values()], new.id)
        crystals_by_id = {c.id: c for c in crystals.values()}
        older: list[Candidate] = []
        newer: list[tuple[Crystal, float]] = []
        for rowid, other in crystals.items():
            if other.id == new.id or not _may_take_part(other) or rowid not in similarities:
                continue
            if other_voice(new, other):  # another person of the transcript: never an update of theirs
                continue
            if _order(other) < _order(new) and other.id not in undone and may_be_outdated(other):
                older.append(Candidate(other.id, other.text, similarities[rowid]))
            elif _order(other) > _order(new) and rowid in near and may_be_outdated(new):
                newer.append((other, similarities[rowid]))
        # a passage of several people's words is never replaced, nor replaces: which of them changed
        # what cannot be told from the words (issue 52: 60 of 275 captured pieces were hidden)
        judged = [] if several_voices(new) else [c for c in older if not several_voices(crystals_by_id[c.key])]
        verdict = choose(new.text, judged) if judged else None
        if verdict is not None and verdict.ambiguous and self.judge is not None:
            verdict = await self._second_opinion(new.text, older, verdict)
        # after the final choice: the one it replaces gets the supersession's own link instead
        await _link_possible_updates(store, new, judged, verdict)
        if verdict is not None:
            old = next(c for c in crystals.values() if c.id == verdict.key)
            if _both_procedures(new, old):
                # A practice said again is a version of its skill (memory.emerging.paraphrases), not its
                # replacement. It stays a candidate all the same: left out of the choice, the judge fell
                # to the next best and hid an unrelated fact (held_out of `python -m bench supersession`).
                verdict = None
            elif may_supersede(new, old):
                await supersede(store, verdict.key, new.id, reason=verdict.reason, actor=ACTOR)
            else:
                await flag_maybe_outdated(store, verdict.key, new, reason=verdict.reason)
                verdict = None
        for later, similarity in sorted(newer, key=lambda pair: _order(pair[0]), reverse=True):
            # Imported out of order: a newer crystal already stored may replace this one.
            if later.id in undone:
                continue
            if several_voices(later) or several_voices(new):
                continue
            replaced = choose(later.text, [Candidate(new.id, new.text, similarity)])
            if replaced is not None and not _both_procedures(later, new):
                if may_supersede(later, new):
                    await supersede(store, new.id, later.id, reason=replaced.reason, actor=ACTOR)
                else:
                    await flag_maybe_outdated(store, new.id, later, reason=replaced.reason)
                break
        return verdict

    async def _second_opinion(self, new: str, older: Sequence[Candidate], verdict: Verdict) -> Verdict | None:
        assert self.judge is not None
        ranked = sorted(older, key=lambda c: -c.similarity)[:5]
        picked = await self.judge.pick(new, ranked)
        if picked is None:
            return verdict  # the judge could not say: the offline choice stands
        if picked == "":
            return None  # the judge says it replaces none of them
        return Verdict(picked, verdict.score, f"judged by the language model; {verdict.reason}", False)


#: Older statements a new one is linked to as their possible update, at most (the closest first).
MAX_POSSIBLE_UPDATES = 3


async def _link_possible_updates(
    store: MemoryStore, new: Crystal, older: Sequence[Candidate], verdict: Verdict | None
) -> None:
    """An ``updates`` link (weighted by similarity) from ``new`` to each older statement it may
    update by the looser reading (``judge.may_update``) but does not replace: search brings it in
    above such a statement even when the question does not find it by itself
    (``memory.retrieval.later_first``). Nothing is hidden by it."""
    chosen = verdict.key if verdict is not None else None
    possible = [
        c
        for c in sorted(older, key=lambda c: -c.similarity)
        if c.key != chosen and may_update(c.text, new.text, c.similarity, asked_together=False)
    ][:MAX_POSSIBLE_UPDATES]
    if not possible:
        return
    now = store.now_ms()
    async with store.transaction() as db:
        await db.executemany(
            "INSERT OR IGNORE INTO associations (src_id, dst_id, type, weight, created_ms) "
            "VALUES (?, ?, 'updates', ?, ?)",
            [(new.id, c.key, round(c.similarity, 4), now) for c in possible],
        )


async def supersede(store: MemoryStore, old_id: str, new_id: str, *, reason: str, actor: str) -> Crystal:
    """Mark ``old_id`` superseded by ``new_id`` (both must exist and differ), with an ``updates``
    link and an attribution row each. A crystal already superseded keeps its first superseder."""
    if old_id == new_id:
        raise InvalidValue("a crystal does not supersede itself")
    await store.get(old_id)
    newer = await store.get(new_id)
    now = store.now_ms()
    async with store.transaction() as db:
        # It stopped being true when the newer one was said (for an import, long before now).
        cursor = await db.execute(
            "UPDATE crystals SET superseded_by = ?, superseded_ms = ?, updated_at_ms = ? "
            "WHERE id = ? AND superseded_by IS NULL",
            (new_id, newer.created_at_ms, now, old_id),
        )
        if cursor.rowcount:
            await db.execute(
                "INSERT OR IGNORE INTO associations (src_id, dst_id, type, weight, created_ms) "
                "VALUES (?, ?, 'updates', 1.0, ?)",
                (new_id, old_id, now),
            )
            await db.executemany(
                "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, ?, ?, ?)",
                [
                    (old_id, actor, "superseded", now, f"by {new_id}: {reason}"[:500]),
                    (new_id, actor, "supersedes", now, old_id),
                ],
            )
    return await store.get(old_id)


async def flag_maybe_outdated(store: MemoryStore, old_id: str, new: Crystal, *, reason: str) -> None:
    """Note on the person's ``old_id`` that ``new`` (not the person's words) may update it: shown
    with its attribution chain (``memory show``, the dashboard); it stays current."""
    detail = (
        f"maybe outdated by {new.id} ({new.origin}): {reason}. Only the person's own words replace it: "
        f"`bitterbot-node memory supersede {old_id} {new.id}` if it is"
    )
    async with store.transaction() as db:
        await db.execute(  # once: the steps after embedding may run again after a kill
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) SELECT ?, ?, 'maybe_outdated', ?, ? "
            "WHERE NOT EXISTS (SELECT 1 FROM attributions WHERE crystal_id = ? AND action = 'maybe_outdated' "
            "AND detail = ?)",
            (old_id, ACTOR, store.now_ms(), detail[:500], old_id, detail[:500]),
        )


async def unsupersede(store: MemoryStore, crystal_id: str, *, actor: str = "local") -> Crystal:
    """Make a superseded crystal current again; its superseder is never again taken to replace it.
    ``NotSuperseded`` if it was not superseded."""
    crystal = await store.get(crystal_id)
    if crystal.superseded is None:
        raise NotSuperseded(crystal_id)
    now = store.now_ms()
    async with store.transaction() as db:
        await db.execute(
            "UPDATE crystals SET superseded_by = NULL, superseded_ms = NULL, updated_at_ms = ? WHERE id = ?",
            (now, crystal_id),
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'unsuperseded', ?, ?)",
            (crystal_id, actor, now, crystal.superseded.by),
        )
    return await store.get(crystal_id)


def _may_take_part(crystal: Crystal) -> bool:
    return (
        crystal.origin is not Origin.PEER
        and not crystal.quarantined
        and not _stated_skill(crystal)
        and crystal.lifecycle not in (Lifecycle.EXPIRED, Lifecycle.ARCHIVED)
        and crystal.superseded is None
    )


def _stated_skill(crystal: Crystal) -> bool:
    """A skill someone said is one: it has versions of its own (``memory.emerging.skill_versions``). A
    statement the typer took for a skill ("Correction: the endpoint changed to…") takes part."""
    return crystal.semantic_type is SemanticType.SKILL and crystal.type_source not in INFERRED


def _may_replace_something(text: str) -> bool:
    """Whether the words beyond the nearest neighbours are worth a search: only a statement that
    speaks of change can replace anything (``judge.pair_score``)."""
    return change_cue(text).strength > 0 or bool(negated_stems(text))


def _order(crystal: Crystal) -> tuple[int, int, str]:
    return crystal.created_at_ms, crystal.stored_at_ms, crystal.id


async def _sharing_words(store: MemoryStore, text: str) -> list[int]:
    match = fts_match(fts_terms(text)[:KEYWORD_TERMS])
    if match is None:
        return []
    async with store.reader().execute(
        "SELECT rowid FROM crystals_fts WHERE crystals_fts MATCH ? ORDER BY bm25(crystals_fts) LIMIT ?",
        (match, KEYWORD_CANDIDATES),
    ) as cursor:
        return [int(r[0]) for r in await cursor.fetchall()]


async def _similarities(
    store: MemoryStore, vector: Vectors, extra: Sequence[int], near: dict[int, float]
) -> dict[int, float]:
    out = dict(near)
    if extra:
        for rowid, stored in (await store.vectors.vectors_of(store.reader(), extra)).items():
            out[rowid] = cosine(vector, stored)
    return out


async def _undone(store: MemoryStore, ids: Sequence[str], new_id: str) -> set[str]:
    """Of ``ids`` and ``new_id``, the pairs with ``new_id`` the person undid (either way round)."""
    marks = ", ".join("?" * len(ids))
    if not ids:
        return set()
    async with store.reader().execute(
        f"SELECT crystal_id, detail FROM attributions WHERE action = 'unsuperseded' "
        f"AND ((crystal_id IN ({marks}) AND detail = ?) OR (crystal_id = ? AND detail IN ({marks})))",
        (*ids, new_id, new_id, *ids),
    ) as cursor:
        rows = await cursor.fetchall()
    return {str(r[0]) if r[0] != new_id else str(r[1]) for r in rows}


def _both_procedures(one: Crystal, other: Crystal) -> bool:
    return one.semantic_type in KNOWLEDGE_TYPES and other.semantic_type in KNOWLEDGE_TYPES
