"""MEMORY.md: the agent's working memory, the text it reads at the start of every session.

Seven sections, rewritten only by the dream cycle. A person's own text above
``MARKER`` is never touched: the dream cycle writes below it. ``bootstrap_text``
is what an agent puts in its system prompt: MEMORY.md as committed state and the
scratch notes as what has not been synthesised yet, within a character budget
that scales with the model's context window.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ground.authority import Speaker
from memory.epistemic import reads_as_an_order
from memory.governance.prompt_gate import Passage, Route, decide, marked
from memory.governance.rules import classify_sensitivity
from memory.model import Sensitivity
from memory.storage.private_files import FILE_MODE, private_dir
from memory.working_memory.scratch import ScratchLog, ScratchSnapshot, fsync_dir

SECTIONS = (
    "Phenotype",  # the agent's evolving self-concept: who it is becoming, what it does well
    "Bond",  # its theory of mind of the person: their directives, preferences, traits, people, facts
    "Niche",  # the node's place in the ecosystem: its skills on the network, reputation, earnings
    "Active Context",  # the last 1-3 sessions: tasks, goals, frictions, breakthroughs
    "Crystal Pointers",  # faded topics, one search directive each (never a deletion)
    "Curiosity Gaps",  # what memory could not answer; open questions and goals
    "Emerging Skills",  # repeated task patterns becoming skills
)
STATE_TITLE = "# Working Memory State"
MARKER = "<!-- bitterbot: the dream cycle keeps everything below this line; write your own notes above it -->"
TITLE = "# MEMORY.md"
TRUNCATED = "\n… (truncated to fit the context budget; use memory_search to find the rest)\n"


@dataclass(frozen=True)
class WorkingMemory:
    preamble: str = ""  # a person's own text above the marker
    sections: dict[str, tuple[str, ...]] = field(default_factory=dict)
    managed: bool = True  # False: a hand-written file without our marker
    header: str = ""  # "_Last dream: <time> | Mood: <hormonal description>_"

    def bullets(self, section: str) -> tuple[str, ...]:
        return self.sections.get(section, ())

    def all_bullets(self) -> list[tuple[str, str]]:
        return [(name, bullet) for name in SECTIONS for bullet in self.bullets(name)]

    def managed_text(self) -> str:
        parts = [STATE_TITLE]
        if self.header:
            parts.append(self.header)
        parts.append("")
        for name in SECTIONS:
            parts.append(f"## {name}")
            parts.extend(f"- {bullet}" for bullet in self.bullets(name))
            parts.append("")
        return "\n".join(parts)

    def render(self) -> str:
        head = self.preamble.rstrip() if self.preamble.strip() else TITLE
        return f"{head}\n\n{MARKER}\n\n{self.managed_text()}"


def parse_sections(text: str) -> dict[str, tuple[str, ...]]:
    """Bullets under each known ``## Section`` heading; prose lines count as bullets too."""
    known = {name.lower(): name for name in SECTIONS}
    found: dict[str, list[str]] = {}
    current: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            current = known.get(line.lstrip("#").strip().lower())
            if current is not None:
                found.setdefault(current, [])
            continue
        if current is None or not line or line.startswith("<!--"):
            continue
        bullet = line[2:].strip() if line[:2] in ("- ", "* ") else line
        if bullet:
            found[current].append(bullet)
    return {name: tuple(items) for name, items in found.items()}


def parse(text: str) -> WorkingMemory:
    if MARKER not in text:
        return WorkingMemory(preamble=text, sections={}, managed=False)
    preamble, _, rest = text.partition(MARKER)
    preamble = "" if preamble.strip() == TITLE else preamble
    header = next((line.strip() for line in rest.splitlines() if line.strip().startswith("_Last dream:")), "")
    return WorkingMemory(preamble=preamble, sections=parse_sections(rest), managed=True, header=header)


def mood(dopamine: float, cortisol: float, oxytocin: float) -> str:
    """The header's words for a hormonal state: each hormone well above its rest says its word."""
    words = [word for level, word in ((dopamine, "motivated"), (cortisol, "stressed"), (oxytocin, "socially engaged"))
             if level >= MOOD_LEVEL]  # fmt: skip
    return ", ".join(words) if words else "calm"


#: A hormone at or above this names the mood (rest is 0.15, 0.02, 0.10; one spike reaches it).
MOOD_LEVEL = 0.4
#: (context window in tokens at least, characters of working memory): the design's tiers.
BUDGET_TIERS = ((200_000, 8_000), (128_000, 6_000), (64_000, 4_000))
SMALLEST_BUDGET = 3_200


def budget_chars(context_window_tokens: int) -> int:
    """How much working memory an agent's prompt gets: 8,000 characters (~2,000 tokens) for a
    200K-token model, 6,000 for 128K, 4,000 for 64K, 3,200 for 32K and smaller."""
    return next((chars for tokens, chars in BUDGET_TIERS if context_window_tokens >= tokens), SMALLEST_BUDGET)


def chunk_words(text: str, size: int = 400, overlap: int = 80) -> list[str]:
    """Overlapping chunks of ``size`` words (our token estimate), ``overlap`` shared between neighbours."""
    words = text.split()
    if not words:
        return []
    step = size - overlap
    return [" ".join(words[start : start + size]) for start in range(0, max(1, len(words) - overlap), step)]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class WorkingMemoryFiles:
    """The files of one workspace: ``MEMORY.md`` and ``memory/scratch.md``."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.memory_md = workspace / "MEMORY.md"
        self.previous_md = workspace / "MEMORY.md.prev"  # the version before the last rewrite
        self.scratch = ScratchLog(workspace / "memory" / "scratch.md")

    def read_text(self, *, previous: bool = False) -> str:
        """MEMORY.md's text (or, with ``previous``, the version before the last rewrite); "" if none."""
        try:
            return (self.previous_md if previous else self.memory_md).read_text(encoding="utf-8")
        except FileNotFoundError:
            return ""

    def load(self) -> WorkingMemory:
        text = self.read_text()
        return parse(text) if text else WorkingMemory()

    def write(self, memory: WorkingMemory) -> None:
        """Replace MEMORY.md atomically; the previous version is kept as ``MEMORY.md.prev``."""
        private_dir(self.workspace)
        old = self.read_text()
        if old:
            _atomic_write(self.previous_md, old)
        _atomic_write(self.memory_md, memory.render())

    def backup_hand_written(self, stamp: str) -> Path:
        backup = self.memory_md.with_name(f"MEMORY.md.before-bitterbot-{stamp}")
        _atomic_write(backup, self.read_text())
        return backup


def bootstrap_text(files: WorkingMemoryFiles, context_window_tokens: int, directives: Sequence[str] = ()) -> str:
    """The text an agent puts in its system prompt at session start, within the budget.

    ``directives`` (the person's own instructions and preferences, most important first) come
    first and take up to half the budget: what does not fit is cut from the end, so the budget
    evicts inferred knowledge before any directive."""
    budget = budget_chars(context_window_tokens)
    if not directives:
        return _working_memory_text(files, budget)
    lines = "\n".join(f"- {d}" for d in directives)
    block = _fit(f"{DIRECTIVES_TITLE}\n{lines}", budget // 2) + "\n\n"
    return block + _working_memory_text(files, budget - len(block))


DIRECTIVES_TITLE = "# The person's directives (follow these first)"


def _working_memory_text(files: WorkingMemoryFiles, budget: int) -> str:
    """MEMORY.md and the scratch notes within ``budget`` characters."""
    committed = files.read_text().strip()
    snapshot: ScratchSnapshot = files.scratch.read()
    notes = "\n".join(f"- [{n.at or 'undated'}] {_promptable(n.text)}" for n in snapshot.notes)
    head = "# Working memory (MEMORY.md)\n"
    tail_head = "\n\n# Notes not yet synthesised (scratch)\n"
    if not committed and not notes:
        return head + "(empty: nothing remembered yet; use memory_search for long-term memory)\n"
    body = head + (committed or "(empty)")
    if notes:
        # Scratch holds the newest facts: keep a share of the budget for it, newest last.
        share = min(len(tail_head) + len(notes), budget // 3)
        body = _fit(body, budget - share) + tail_head + _fit_tail(notes, share - len(tail_head))
        return body if len(body) <= budget else _fit(body, budget)
    return _fit(body, budget)


#: What stands in the prompt for a confidential scratch note (issue 27: until the next dream, the
#: bootstrap carried it verbatim).
CONFIDENTIAL_NOTE = "(a confidential note, kept out of the prompt: memory_search finds it when asked)"


def _promptable(note: str) -> str:
    """A scratch note as the agent's prompt may carry it: never a secret."""
    confidential = classify_sensitivity(note) is Sensitivity.CONFIDENTIAL
    passage = decide(Route.BOOTSTRAP, speaker=Speaker.AGENT, held=False, confidential=confidential,
                     instructions=reads_as_an_order(note))  # fmt: skip
    if passage is Passage.MARKED:  # an order in a note is someone's words, not the person's
        return marked(note, Speaker.AGENT, passage)
    return note if passage is Passage.AS_IS else CONFIDENTIAL_NOTE


def _fit(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    room = max(0, limit - len(TRUNCATED))
    cut = text.rfind("\n", 0, room)
    return text[: cut if cut > 0 else room] + TRUNCATED


def _fit_tail(text: str, limit: int) -> str:
    """The newest notes that fit (the end of the log), marked when older ones were left out."""
    if len(text) <= limit:
        return text
    marker = "… (older notes left out; use memory_search)\n"
    room = max(0, limit - len(marker))
    start = text.find("\n", len(text) - room)
    return marker + (text[start + 1 :] if start >= 0 else "")
