"""Which practices are the same task, and how sure we are that it is becoming a skill. Pure: the
practices come in with their vectors and execution counts (``memory.emerging.practice`` reads them).

A practice is a procedure the person or the agent wrote down (a ``task_pattern`` or a ``skill``
crystal). Practices are grouped in the order they were written: each joins the group whose mean
vector it is nearest, when it is at least ``SIMILAR`` to it, else it starts a group. A group is an
emerging skill once it holds at least two practices and its occurrences (its practices plus the
executions recorded against them) reach ``MIN_OCCURRENCES``; the design's MEMORY.md example counts
4 and 7 occurrences.

Confidence (the design gives the figure, not its formula; ours): how alike the practices are (the
mean similarity to the group's mean vector), times how often it happened (1 - 0.5^(occurrences/2):
0.65 at 3, 0.75 at 4, 0.91 at 7), times how often it worked when executions were recorded
(successes + 1 over executions + 2, so a single failure does not zero it).

Emerging skills that answer a live bounty (``bounty``, found by the marketplace) come first
(``bounty_first``), the larger boost first: the network is asking for them. A bounty only reorders
what is already emerging; it never makes a pattern emerge, and MEMORY.md picks its lines by
confidence before ordering them, so a stranger's bounty brings nothing into the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memory.embedders.base import cosine
from memory.model import Bounty
from memory.working_memory.synthesis import EMERGING_MARK, one_line

#: Cosine to a group's mean vector to join it: MiniLM puts paraphrases of one procedure at 0.7-0.9,
#: and procedures that only share a topic ("restart nginx", "rotate nginx logs") near 0.5-0.65.
SIMILAR = 0.72
MIN_OCCURRENCES = 3
MAX_LABEL_CHARS = 80


@dataclass(frozen=True, slots=True)
class Practice:
    crystal_id: str
    text: str
    vector: np.ndarray  # unit length
    said_at_ms: int
    executions: int = 0
    successes: int = 0


@dataclass(frozen=True, slots=True)
class EmergingSkill:
    id: str  # its first practice's crystal id: stable while the pattern grows
    label: str  # the most typical practice, one line
    typical_id: str  # that practice's crystal
    crystal_ids: tuple[str, ...]
    occurrences: int
    confidence: float
    last_seen_ms: int
    bounty: Bounty | None = None  # the live bounty its typical practice answers (the marketplace's)

    def line(self) -> str:
        """As MEMORY.md's Emerging Skills lists it (the design's own form)."""
        return f"{self.label}{EMERGING_MARK}{round(self.confidence * 100)}% | Occurrences: {self.occurrences}"


def group(practices: Sequence[Practice], *, similar: float = SIMILAR) -> list[list[Practice]]:
    """``practices`` in groups of the same task, each in the order written."""
    groups: list[list[Practice]] = []
    sums: list[np.ndarray] = []
    for practice in sorted(practices, key=lambda p: (p.said_at_ms, p.crystal_id)):
        best, best_similarity = -1, similar
        for index, total in enumerate(sums):
            similarity = cosine(practice.vector, total)
            if similarity >= best_similarity:
                best, best_similarity = index, similarity
        if best < 0:
            groups.append([practice])
            sums.append(practice.vector.astype(np.float64).copy())
        else:
            groups[best].append(practice)
            sums[best] += practice.vector
    return groups


def confidence(cohesion: float, occurrences: int, executions: int, successes: int) -> float:
    frequency = 1.0 - 0.5 ** (occurrences / 2)
    works = (successes + 1) / (executions + 2) if executions else 1.0
    return float(round(max(0.0, min(1.0, cohesion * frequency * works)), 4))


def emerging(
    practices: Sequence[Practice], *, similar: float = SIMILAR, min_occurrences: int = MIN_OCCURRENCES
) -> list[EmergingSkill]:
    """The groups that are becoming skills, the most confident first."""
    found = []
    for members in group(practices, similar=similar):
        executions = sum(p.executions for p in members)
        occurrences = len(members) + executions
        if len(members) < 2 or occurrences < min_occurrences:
            continue
        mean = np.mean([p.vector for p in members], axis=0)
        mean /= float(np.linalg.norm(mean)) or 1.0
        similarities = [float(p.vector @ mean) for p in members]
        typical = members[int(np.argmax(similarities))]
        found.append(
            EmergingSkill(
                id=members[0].crystal_id,
                label=one_line(typical.text, MAX_LABEL_CHARS),
                typical_id=typical.crystal_id,
                crystal_ids=tuple(p.crystal_id for p in members),
                occurrences=occurrences,
                confidence=confidence(
                    sum(similarities) / len(similarities), occurrences, executions, sum(p.successes for p in members)
                ),
                last_seen_ms=max(p.said_at_ms for p in members),
            )
        )
    return sorted(found, key=_by_confidence)


def _by_confidence(skill: EmergingSkill) -> tuple[float, int, str]:
    return (-skill.confidence, -skill.occurrences, skill.id)


def bounty_first(skills: Sequence[EmergingSkill]) -> list[EmergingSkill]:
    """``skills`` with those answering a bounty first, the larger priority boost first; each part
    otherwise the most confident first."""
    return sorted(skills, key=lambda s: (-(s.bounty.priority_boost if s.bounty else 0.0), *_by_confidence(s)))
