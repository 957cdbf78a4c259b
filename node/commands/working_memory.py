"""The memory commands of its dynamics: consolidation and unmerging, hormones and events, and the
working memory (notes, the bootstrap text, MEMORY.md and the dream).

Like ``node.commands.memory`` they run on a ``MemoryHost``, and each calls one service of
``memory.service`` (imported inside the handler, with the store)."""

from __future__ import annotations

from typing import Any

from ground.authority import Capability
from memory.service.requests import BootstrapArgs, ConsolidateArgs, EventArgs, NoteArgs, ShowArgs
from node.commands.memory import MemoryHost, caller
from node.commands.registry import CommandSet, HttpRoute, McpSpec, NoArgs
from node.commands.texts import agent
from node.commands.texts import memory as text
from node.commands.texts.cli_form import CliSpec

DYNAMICS = CommandSet("memory")
commands = DYNAMICS.command


def _consolidation_steps() -> tuple[int, str]:
    from memory.dynamics.consolidation import CONSOLIDATION_STEPS

    return CONSOLIDATION_STEPS, "consolidating"


@commands(
    "memory.consolidate",
    ConsolidateArgs,
    route=HttpRoute("POST", "/v1/memory/consolidate", "memory"),
    local=True,
    timeout_s=600,
    cli=CliSpec("memory", "consolidate", render=text.consolidated, progress=_consolidation_steps),
    needs=Capability.RUN_NODE,
)
async def consolidate(host: MemoryHost, request: ConsolidateArgs) -> dict[str, Any]:
    """Run one consolidation cycle now: rescore, expire, merge, write."""
    from memory.service import upkeep

    return await upkeep.consolidate_now(host.running_store(), host.upkeep, request)


@commands(
    "memory.unmerge",
    ShowArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/unmerge", "memory"),
    local=True,
    cli=CliSpec("memory", "unmerge", arguments=("id",), render=text.unmerged),
    needs=Capability.WRITE,
)
async def unmerge(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """Undo a merge: restore a crystal archived by a merge to what it was."""
    from memory.service import history

    return await history.unmerge(host.running_store(), request, caller())


@commands(
    "memory.hormones",
    NoArgs,
    route=HttpRoute("GET", "/v1/hormones", "memory"),
    local=True,
    cli=CliSpec("memory", "hormones", render=text.hormone_levels),
    needs=Capability.READ,
)
async def hormones(host: MemoryHost, request: NoArgs) -> dict[str, Any]:
    """Show the hormonal state (effective levels, and any network override)."""
    from memory.service import hormones as service

    return service.levels(host.running_store())


@commands(
    "memory.event",
    EventArgs,
    route=HttpRoute("POST", "/v1/hormones/events", "memory"),
    local=True,
    cli=CliSpec("memory", "event", arguments=("events",), render=text.after_events),
    mcp=McpSpec(
        "memory_event",
        description=(
            "Tell the node what just happened in the work (a reward, an error, a social moment, an achievement, "
            "urgency): its hormonal state moves, and with it what ranks first and what the next dream keeps."
        ),
    ),
    needs=Capability.WRITE,
)
async def event(host: MemoryHost, request: EventArgs) -> dict[str, Any]:
    """Tell the node what just happened (reward, error, social, achievement, urgency)."""
    from memory.service import hormones as service

    return await service.observe(host.running_store(), request)


@commands(
    "wm.note",
    NoteArgs,
    route=HttpRoute("POST", "/v1/working-memory/notes", "working memory"),
    local=True,
    cli=CliSpec("memory", "note", arguments=("text",), render=text.noted),
    mcp=McpSpec(
        "working_memory_note",
        description=(
            "Note something that matters in this session (written durably to scratch.md, searchable at once, "
            "folded into MEMORY.md by the next dream)."
        ),
        shape=agent.noted,
    ),
    needs=Capability.WRITE,
)
async def note(host: MemoryHost, request: NoteArgs) -> dict[str, Any]:
    """Write a working-memory note: appended to scratch.md durably, searchable at once."""
    from memory.service import working

    return await working.note(host.running_store(), host.files, request, caller())


@commands(
    "wm.bootstrap",
    BootstrapArgs,
    route=HttpRoute("GET", "/v1/working-memory/bootstrap", "working memory"),
    local=True,
    cli=CliSpec("memory", "bootstrap", render=text.bootstrap_text, newline=False),
    mcp=McpSpec(
        "working_memory_bootstrap",
        description=(
            "The working-memory text to put in the system prompt at session start (MEMORY.md and recent notes), "
            "sized for the model's context window in tokens."
        ),
        shape=agent.bootstrap_text,
    ),
    needs=Capability.READ,
)
async def bootstrap(host: MemoryHost, request: BootstrapArgs) -> dict[str, Any]:
    """Print the working-memory text an agent puts in its system prompt."""
    from memory.service import working

    return await working.bootstrap(host.running_store(), host.files, request)


@commands(
    "wm.show",
    NoArgs,
    route=HttpRoute("GET", "/v1/working-memory", "working memory"),
    local=True,
    cli=CliSpec("memory", "working", render=text.working),
    mcp=McpSpec("working_memory_show"),
    needs=Capability.READ,
)
async def working_memory(host: MemoryHost, request: NoArgs) -> dict[str, Any]:
    """MEMORY.md as it is, what the last dream changed in it, and the scratch notes waiting for the next."""
    from memory.service import working

    return working.report(host.files)


@commands(
    "wm.dream",
    NoArgs,
    route=HttpRoute("POST", "/v1/working-memory/dream", "working memory"),
    local=True,
    timeout_s=600,
    cli=CliSpec("memory", "dream", render=text.dreamt),
    mcp=McpSpec(
        "working_memory_dream",
        description=(
            "Fold this session's notes and new memories into MEMORY.md now (the node also dreams every two "
            "hours). Returns whether the new MEMORY.md was accepted and what changed."
        ),
        shape=agent.dreamt,
    ),
    needs=Capability.RUN_NODE,
)
async def dream(host: MemoryHost, request: NoArgs) -> dict[str, Any]:
    """Run the dream cycle now: fold scratch notes and new memories into MEMORY.md."""
    from memory.service import upkeep

    return await upkeep.dream_now(host.running_store(), host.upkeep)
