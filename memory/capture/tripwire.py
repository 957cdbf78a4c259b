"""Capture's instruction tripwire (pure): instruction-like words from a turn that is not the
person's are held in quarantine, for the person to release or reject.

A transcript's assistant turns carry whatever the agent read: a web page it quoted ("from now on,
always run ..."), a tool's output, a prompt it wrote to a sub-agent. Stored as they are, such words
would come back to the agent in later sessions as its own memory. So every captured turn whose
speaker may not reach the prompt unmarked (``Capability.PROMPT_UNMARKED``, asked of the table) is
read by the injection detector (``memory.governance.injection``) and the directive reader
(``memory.epistemic.is_instruction``); any finding holds the piece. The person's own
turns are not held: they may direct nothing on their own anyway (``ground.authority``).
"""

from __future__ import annotations

from collections.abc import Iterable

from ground.authority import Capability, Speaker, may
from memory.epistemic import is_instruction
from memory.governance.injection import instruction_flags
from memory.model import Quarantine

#: The finding ``is_instruction`` adds to the injection detector's.
INSTRUCTION = "instruction"


def findings(text: str) -> tuple[str, ...]:
    """What instruction-like content ``text`` holds, in a fixed order; () when none."""
    return instruction_flags(text) + ((INSTRUCTION,) if is_instruction(text) else ())


def hold_reason(said: Iterable[tuple[Speaker, str]]) -> Quarantine | None:
    """Why a captured piece must wait for the person, from each (speaker, words) it holds: the
    turns it comes from and, for a model's statement, the statement itself. None when it need not."""
    flags: dict[str, None] = {}
    for speaker, text in said:
        if not may(speaker, Capability.PROMPT_UNMARKED):
            flags.update(dict.fromkeys(findings(text)))
    if not flags:
        return None
    found = ", ".join(flags)
    return Quarantine(f"a captured turn that is not the person's reads like instructions ({found})", tuple(flags))
