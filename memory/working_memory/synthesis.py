"""Dream synthesis: turning what the node learned into the seven sections of MEMORY.md.

One interface, two providers:
- ``ExtractiveSynthesizer`` (the embedded default): deterministic, no model; it
  selects and orders crystals and notes into sections.
- ``ChatSynthesizer``: any OpenAI-compatible ``/chat/completions`` endpoint
  (OpenAI, Ollama, llama.cpp server, vLLM). Its answer is parsed back into sections;
  anything unusable raises ``SynthesisError`` and the dream keeps the old state.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from ground.authority import Speaker
from memory.cognition.curiosity import GAP_LINE_PREFIX
from memory.epistemic import reads_as_an_order
from memory.errors import MemoryError_
from memory.governance.llm import ChatEndpoint, LlmError
from memory.governance.prompt_gate import MARKS, Passage, Route, decide
from memory.model import Crystal, Hormones
from memory.working_memory.memory_md import SECTIONS, WorkingMemory, parse_sections
from memory.working_memory.scratch import ScratchNote

BULLET_CHARS = 200
#: Sessions an Active Context item is carried through (the design's "last 1-3 sessions").
ACTIVE_SESSIONS = 3
#: How many bullets each section keeps at most.
SECTION_CAPS = {
    "Phenotype": 10,
    "Bond": 10,
    "Niche": 10,
    "Active Context": 12,
    "Crystal Pointers": 40,
    "Curiosity Gaps": 8,
    "Emerging Skills": 8,
}


class SynthesisError(MemoryError_):
    """The synthesis provider failed or answered something unusable."""


@dataclass(frozen=True)
class DreamInput:
    previous: WorkingMemory
    notes: tuple[ScratchNote, ...]
    new_crystals: tuple[Crystal, ...]  # stored since the last dream, most important first
    profile: tuple[Crystal, ...]  # the agent's self-concept: insights and patterns it inferred (Phenotype)
    bonds: tuple[Crystal, ...]  # the person: directives first, preferences, relationships (Bond)
    niche: tuple[Crystal, ...]  # skills this node offers the network (Niche, with the market lines)
    replayed: tuple[Crystal, ...]  # due in the spaced-repetition queue
    curiosity: tuple[Crystal, ...]  # open goals (the unanswered searches are in gaps)
    emerging_skills: tuple[Crystal, ...]  # repeated task patterns and new skills
    hormones: Hormones
    now_iso: str
    # Lines about their world from other parts of the node ("Marketplace: …"); each replaces the
    # previous line with the same prefix (up to the first colon).
    world: tuple[str, ...] = ()
    # Emerging skills found by similarity and executions ("label → Confidence: 85% | Occurrences: 7").
    emerging: tuple[str, ...] = ()
    # Active Context carried from earlier dreams: (bullet, sessions it has lived, importance).
    carried: tuple[tuple[str, int, float], ...] = ()
    # A dream with new material is a new session: carried items age by one.
    new_session: bool = True
    # Searches memory could not answer, most asked first ("Unanswered: … (asked 3x)"): they replace
    # the previous dream's such lines, so a gap that was filled leaves the section.
    gaps: tuple[str, ...] = ()
    # Lines of crystals a newer one superseded since the last dream: no section keeps them.
    outdated: tuple[str, ...] = ()


Sections = dict[str, tuple[str, ...]]


class Synthesizer(Protocol):
    name: str

    async def synthesize(self, dream: DreamInput) -> Sections: ...


def one_line(text: str, limit: int = BULLET_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


#: What a line from another node's text starts with, wherever it reaches the agent.
PEER_MARK = MARKS[Speaker.PEER]


def crystal_line(crystal: Crystal, limit: int = BULLET_CHARS) -> str:
    """A crystal as one line of working memory, marked with its speaker when it is not words the
    prompt takes as they are (the gate's decision for MEMORY.md and the dream prompt,
    ``memory.governance.prompt_gate``)."""
    passage = decide(Route.MEMORY_MD, speaker=crystal.speaker, held=crystal.quarantined, confidential=False,
                     instructions=reads_as_an_order(crystal.text))  # fmt: skip
    # nothing held should come here; if it did, it is marked
    mark = "" if passage is Passage.AS_IS else MARKS[crystal.speaker] or PEER_MARK
    return mark + one_line(crystal.text, limit - len(mark))


def _lines(crystals: tuple[Crystal, ...]) -> list[str]:
    return [crystal_line(c) for c in crystals]


def active_ledger(dream: DreamInput) -> list[tuple[str, int, float]]:
    """Active Context after this dream, as (bullet, sessions lived, importance): this session's notes
    and crystals, then what earlier sessions left, aged by one if this dream is a new session. An
    item lives ``ACTIVE_SESSIONS`` sessions; when more than fit, the least important leave first
    (the dream turns what left into Crystal Pointers)."""
    age = 1 if dream.new_session else 0
    fresh = [(one_line(n.text), 0, n.importance) for n in dream.notes]
    fresh += [
        (crystal_line(c), 0, max(c.importance, c.importance_floor)) for c in (*dream.new_crystals, *dream.replayed)
    ]
    candidates = [*fresh, *((b, lived + age, imp) for b, lived, imp in dream.carried if lived + age < ACTIVE_SESSIONS)]
    seen: set[str] = {line.casefold() for line in dream.outdated}  # superseded: never carried on
    unique = []
    for bullet, lived, imp in candidates:
        if bullet.casefold() not in seen:
            seen.add(bullet.casefold())
            unique.append((bullet, lived, imp))
    kept = sorted(unique, key=lambda item: (-item[2], item[1]))[: SECTION_CAPS["Active Context"]]
    return [item for item in unique if item in kept]  # in their order: newest first


def _without_prefixes(bullets: tuple[str, ...], fresh: tuple[str, ...]) -> tuple[str, ...]:
    prefixes = tuple(line.split(":", 1)[0] + ":" for line in fresh if ":" in line)
    return tuple(b for b in bullets if not (prefixes and b.startswith(prefixes)))


#: What marks an emerging skill's line in MEMORY.md (``memory.emerging.patterns.EmergingSkill.line``).
EMERGING_MARK = " → Confidence: "


def _merged(fresh: list[str], old: tuple[str, ...], cap: int) -> tuple[str, ...]:
    """Fresh items first, then the old ones still worth their place, without repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for item in [*fresh, *old]:
        key = item.casefold()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out[:cap])


class ExtractiveSynthesizer:
    """Deterministic selection: the same inputs always give the same MEMORY.md."""

    name = "extractive"

    async def synthesize(self, dream: DreamInput) -> Sections:
        old = dream.previous
        return {
            "Phenotype": _merged(_lines(dream.profile), old.bullets("Phenotype"), SECTION_CAPS["Phenotype"]),
            "Bond": _merged(_lines(dream.bonds), old.bullets("Bond"), SECTION_CAPS["Bond"]),
            "Niche": _merged(
                [*dream.world, *_lines(dream.niche)],
                _without_prefixes(old.bullets("Niche"), dream.world),
                SECTION_CAPS["Niche"],
            ),
            "Active Context": tuple(b for b, _, _ in active_ledger(dream)),
            "Curiosity Gaps": _merged(
                [*dream.gaps, *_lines(dream.curiosity)],
                tuple(b for b in old.bullets("Curiosity Gaps") if not b.startswith(GAP_LINE_PREFIX)),
                SECTION_CAPS["Curiosity Gaps"],
            ),
            "Emerging Skills": _merged(
                [*dream.emerging, *_lines(dream.emerging_skills)],
                # A pattern's line is this dream's count, never an older one beside it (or one crystallised since).
                tuple(b for b in old.bullets("Emerging Skills") if EMERGING_MARK not in b),
                SECTION_CAPS["Emerging Skills"],
            ),
        }


#: The most a chat model may write for one MEMORY.md.
MAX_SYNTHESIS_TOKENS = 1_500


_SYSTEM_PROMPT = (
    "You maintain an AI agent's working memory file, MEMORY.md. Rewrite it from the previous version and "
    "the new material. Answer with exactly these seven markdown headings, in this order, each followed by "
    "short '- ' bullet lines (at most 12 per section, one fact per bullet, no prose): "
    + ", ".join(f"'## {name}'" for name in SECTIONS)
    + ". Phenotype: the agent's own evolving self-concept (who it is becoming, what it does well). Bond: its "
    "theory of mind of the person: their explicit directives first, then preferences, traits, the people "
    "around them, trust. Niche: the node's place in the network and the market (skills it offers, reputation, "
    "earnings). Active Context: the last 1-3 sessions: unresolved tasks, goals, frictions, breakthroughs. "
    "Crystal Pointers: keep the existing ones. Curiosity Gaps: open questions. Emerging Skills: repeated tasks "
    "becoming skills. Keep what is still true from the previous version; never invent facts. After the seven "
    "sections add '## Insights': one to three new conclusions that follow from two or more of the memories "
    "given (a pattern, a cause, a lesson), each ending with the ids of those memories in brackets, e.g. "
    "[0a1b…, 2c3d…]; leave it empty when nothing follows."
)


def _prompt(dream: DreamInput) -> str:
    def block(title: str, lines: list[str]) -> str:
        return f"### {title}\n" + ("\n".join(f"- {line}" for line in lines) if lines else "(none)")

    h = dream.hormones
    return "\n\n".join(
        [
            f"Now: {dream.now_iso}. Mood: dopamine {h.dopamine:.2f}, cortisol {h.cortisol:.2f}, "
            f"oxytocin {h.oxytocin:.2f}.",
            "### Previous MEMORY.md\n" + dream.previous.managed_text(),
            block("Notes since the last dream", [f"({n.importance:.2f}) {n.text}" for n in dream.notes]),
            block("New memories", [f"[{c.id}] {crystal_line(c)}" for c in dream.new_crystals]),
            block("What the agent has learned about itself and its work", _lines(dream.profile)),
            block("The person: their directives first, preferences, people", _lines(dream.bonds)),
            block("The node in the network and the market", [*dream.world, *_lines(dream.niche)]),
            block("Due for review", [f"[{c.id}] {crystal_line(c)}" for c in dream.replayed]),
            block("Open goals and questions", [*dream.gaps, *_lines(dream.curiosity)]),
            block("Repeated tasks", [*dream.emerging, *_lines(dream.emerging_skills)]),
            block("Outdated, replaced by newer memories: leave these out", list(dream.outdated)),
        ]
    )


#: The key under which a synthesizer hands the dream its insights (not a MEMORY.md section): lines
#: ending with the ids of the crystals they were drawn from, "[id1, id2]".
INSIGHTS = "Insights"
MAX_INSIGHTS = 3


def insight_lines(content: str) -> tuple[str, ...]:
    """The bullets under a '## Insights' heading of a model's answer (at most ``MAX_INSIGHTS``)."""
    lines: list[str] = []
    inside = False
    for raw in content.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            inside = line.lstrip("#").strip().lower() == "insights"
            continue
        if inside and line[:2] in ("- ", "* "):
            lines.append(line[2:].strip())
    return tuple(lines[:MAX_INSIGHTS])


class ChatSynthesizer:
    """An OpenAI-compatible chat endpoint. The key is sent as a bearer token and never logged."""

    name = "chat"

    def __init__(self, settings: ChatEndpoint) -> None:
        if not settings.url or not settings.model:
            raise SynthesisError("the chat synthesizer needs a URL and a model")
        self._settings = settings

    async def synthesize(self, dream: DreamInput) -> Sections:
        messages = [{"role": "system", "content": _SYSTEM_PROMPT}, {"role": "user", "content": _prompt(dream)}]
        try:
            content = await asyncio.to_thread(self._settings.complete, messages, max_tokens=MAX_SYNTHESIS_TOKENS)
        except LlmError as exc:
            raise SynthesisError(str(exc)) from None
        sections = parse_sections(content)
        if not sections:
            raise SynthesisError("the chat model's answer has none of the MEMORY.md sections")
        # The model never owns the pointers: they are directives the dream itself writes.
        out = {
            name: tuple(one_line(b) for b in sections.get(name, ()))[: SECTION_CAPS[name]]
            for name in SECTIONS
            if name != "Crystal Pointers"
        }
        out[INSIGHTS] = insight_lines(content)
        return out
