"""Reading the practices out of the store, and crystallising an emerging skill into one.

Practices are the live ``task_pattern`` and ``skill`` crystals said by a speaker the authority
table lets form a skill (``Capability.FORM_SKILL``: the person, the agent, the person's turns in a
transcript; never a captured assistant turn, which may be a page the agent quoted, nor a file or a
peer), not held, not superseded, not already frozen into a skill, and not a crystallised skill
itself, embedded by the active embedder, the newest ``MAX_PRACTICES``. How often each was executed
comes from the caller: the executions table is the marketplace's.

Crystallising writes a new ``skill`` crystal (origin ``skill``) derived from every practice of the
pattern, links each practice to it (``part_of``) and freezes the practices: frozen crystals neither
decay nor merge, and no later pattern counts them again (the design's generated/activated ->
frozen, "crystallized as skill").
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ground.authority import Capability, NotAllowed, Speaker, may
from memory.emerging.patterns import EmergingSkill, Practice, emerging
from memory.errors import EditRefused, EmergingSkillNotFound
from memory.governance.prompt_gate import Route, admits_sql
from memory.graph.links import link
from memory.intake.store import IntakeStore
from memory.model import AssociationType, Bounty, Crystal, Lifecycle, NewCrystal, Origin, SemanticType
from memory.storage.store import MemoryStore

#: What a crystallised skill's text starts with when the person gave it none.
SKILL_PREFIX = "Skill: "
#: How many of the newest practices a scan groups (each scan is O(practices x groups)).
MAX_PRACTICES = 2_000

#: The speakers whose practice counts towards a skill, as SQL, from the table (the values are the
#: enum's own, never a caller's).
FORMS_SKILLS_SQL = "c.speaker IN ({})".format(
    ", ".join(f"'{s.value}'" for s in Speaker if may(s, Capability.FORM_SKILL))
)
_PRACTICES_SQL = (
    "SELECT c.rowid, c.id, c.text, c.created_at_ms FROM crystals c "
    "WHERE c.semantic_type IN ('task_pattern', 'skill') AND c.origin NOT IN ('peer', 'skill') "
    f"AND {FORMS_SKILLS_SQL} "
    "AND c.lifecycle IN ('generated', 'activated', 'consolidated') AND c.superseded_by IS NULL "
    f"AND {admits_sql(Route.MEMORY_MD)} ORDER BY c.created_at_ms DESC LIMIT ?"  # its lines go to MEMORY.md
)


async def practices(store: MemoryStore, executions: Mapping[str, tuple[int, int]]) -> list[Practice]:
    """The practices with their vectors; ``executions`` maps a crystal id to (executions, successes)."""
    async with store.reader().execute(_PRACTICES_SQL, (MAX_PRACTICES,)) as cursor:
        rows = [tuple(r) for r in await cursor.fetchall()]
    vectors = await store.vectors.vectors_of(store.reader(), [int(r[0]) for r in rows])
    found = []
    for rowid, crystal_id, text, said_at in rows:
        vector = vectors.get(int(rowid))
        if vector is None:  # not embedded yet: it counts from the next scan on
            continue
        unit = np.asarray(vector, dtype=np.float32)
        unit = unit / (float(np.linalg.norm(unit)) or 1.0)
        done, worked = executions.get(str(crystal_id), (0, 0))
        found.append(Practice(str(crystal_id), str(text), unit, int(said_at), done, worked))
    return found


async def emerging_skills(store: MemoryStore, executions: Mapping[str, tuple[int, int]]) -> list[EmergingSkill]:
    return emerging(await practices(store, executions))


def skill_text(typical: Crystal, text: str | None) -> str:
    """What a skill crystallised from a pattern whose most typical practice is ``typical`` says."""
    # Without a text of its own the skill says what it is: the practice's own words would be the
    # practice itself (the same text is one crystal) and nothing new would be stored.
    return (text or f"{SKILL_PREFIX}{typical.text}").strip()


async def crystallise(
    store: IntakeStore,
    skill: EmergingSkill,
    *,
    text: str | None,
    actor: str,
    speaker: Speaker,
    bounty: Bounty | None = None,
) -> tuple[Crystal, int]:
    """The new skill crystal and how many practices were frozen into it; ``bounty``: the live bounty
    its text answers (the marketplace's match), recorded on it. ``NotAllowed`` when a practice of the
    pattern was said by a speaker that may not form a skill (the pattern was found before the table
    changed, or its id was made up)."""
    for crystal_id in skill.crystal_ids:
        said_by = (await store.get(crystal_id)).speaker
        if not may(said_by, Capability.FORM_SKILL):
            raise NotAllowed(said_by, Capability.FORM_SKILL, f"crystallising practice {crystal_id}")
    typical = await store.get(skill.typical_id)
    new = NewCrystal(
        skill_text(typical, text),
        semantic_type=SemanticType.SKILL,
        origin=Origin.SKILL,
        importance=max(0.5, typical.importance),
        parents=skill.crystal_ids,
        tags=typical.tags,
        actor=actor,
        speaker=speaker,
        bounty=bounty,
    )
    remembered = await store.remember(new)
    if not remembered.created:
        raise EditRefused(
            f"a crystal with this text already exists ({remembered.crystal.id}); give the skill a new text"
        )
    for crystal_id in skill.crystal_ids:
        await link(store, crystal_id, remembered.crystal.id, AssociationType.PART_OF, actor=actor)
        await store.transition(
            crystal_id, Lifecycle.FROZEN, reason=f"crystallised into {remembered.crystal.id}", actor=actor
        )
    return remembered.crystal, len(skill.crystal_ids)


def find(skills: list[EmergingSkill], skill_id: str) -> EmergingSkill:
    for skill in skills:
        if skill.id == skill_id or skill_id in skill.crystal_ids:
            return skill
    raise EmergingSkillNotFound(skill_id)
