"""Working memory: a note written now, the bootstrap text an agent starts a session with, and
MEMORY.md with what the last dream changed in it."""

from __future__ import annotations

import difflib
from typing import Any

from memory.governance.rules import classify_sensitivity
from memory.intake.store import IntakeStore
from memory.model import Sensitivity
from memory.service.caller import Caller
from memory.service.requests import BootstrapArgs, NoteArgs
from memory.storage.store import MemoryStore
from memory.transfer.records import crystal_fields
from memory.working_memory.dream_inputs import directives
from memory.working_memory.memory_md import WorkingMemoryFiles, bootstrap_text
from memory.working_memory.notes import working_memory_note


async def note(store: IntakeStore, files: WorkingMemoryFiles, args: NoteArgs, caller: Caller) -> dict[str, Any]:
    """A working-memory note: appended to scratch.md durably, and a crystal searchable at once."""
    return crystal_fields(await working_memory_note(store, files, args.text, args.importance, speaker=caller.speaker))


async def bootstrap(store: MemoryStore, files: WorkingMemoryFiles, args: BootstrapArgs) -> dict[str, Any]:
    """The text an agent puts in its system prompt, sized for its context window, the person's
    directives first."""
    return {"text": bootstrap_text(files, args.context_window, await directives(store))}


def report(files: WorkingMemoryFiles) -> dict[str, Any]:
    """MEMORY.md, the difference from the version before the last dream, and the waiting scratch
    notes; a confidential note's text stays out (it never reaches MEMORY.md either)."""
    current, previous = files.read_text(), files.read_text(previous=True)
    diff = difflib.unified_diff(
        previous.splitlines(), current.splitlines(), "before the last dream", "now", lineterm=""
    )
    notes = [
        {"at": n.at, "importance": n.importance, "confidential": secret, "text": None if secret else n.text}
        for n in files.scratch.read().notes
        for secret in [classify_sensitivity(n.text) is Sensitivity.CONFIDENTIAL]
    ]
    return {"memory_md": current, "changed_by_last_dream": list(diff) if previous else [], "scratch": notes}
