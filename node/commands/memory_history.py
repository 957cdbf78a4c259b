"""How a stored crystal changes: its text edited (with the old text kept), its type corrected, a link
added by hand, marking it outdated or current again, and a skill's tags, versions and freezing. Each
keeps who did it in the attribution chain, and the agent may not change the person's own words
(``ground.authority``). Each handler calls one service of ``memory.service.history``."""

from __future__ import annotations

from typing import Any

from ground.authority import Capability
from memory.service.requests import EditArgs, LinkArgs, RetypeArgs, ShowArgs, SkillEditArgs, SupersedeArgs
from node.commands.memory import MemoryHost, caller, text_or_stdin
from node.commands.registry import CommandSet, HttpRoute, McpSpec
from node.commands.texts import agent
from node.commands.texts.cli_form import CliSpec

HISTORY = CommandSet("memory")
commands = HISTORY.command


@commands(
    "memory.retype",
    RetypeArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/type", "memory"),
    local=True,
    cli=CliSpec(
        "memory",
        "retype",
        arguments=("id", "type"),
        render=lambda c, _: f"{c['id']} is now {c['semantic_type']} ({c['epistemic_layer']}); the typer learned it",
    ),
    mcp=McpSpec("memory_retype", shape=agent.typed),
    needs=Capability.WRITE,
)
async def retype(host: MemoryHost, request: RetypeArgs) -> dict[str, Any]:
    """Correct a crystal's semantic type; the node keeps the correction as an example and learns from it."""
    from memory.service import history

    return await history.retype(host.running_store(), request, caller())


@commands(
    "memory.link",
    LinkArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/links", "memory"),
    local=True,
    cli=CliSpec("memory", "link", arguments=("id", "to", "type"), render=lambda d, _: f"linked {d['link']}"),
    mcp=McpSpec("memory_link", fields=("id", "to", "type")),
    needs=Capability.WRITE,
)
async def link(host: MemoryHost, request: LinkArgs) -> dict[str, Any]:
    """Link two crystals by hand: contradicts, caused_by, result_of, part_of (memory show lists links)."""
    from memory.service import history

    return await history.link(host.running_store(), request, caller())


@commands(
    "memory.supersede",
    SupersedeArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/supersede", "memory"),
    local=True,
    cli=CliSpec(
        "memory",
        "supersede",
        arguments=("id", "by"),
        render=lambda c, _: f"{c['id']} is superseded by {c['superseded']['by']}",
    ),
    mcp=McpSpec(
        "memory_supersede",
        description=(
            "Say that memory `by` replaces the outdated memory `id` (a changed fact the node missed): searches "
            "then show `by` in its place. memory_unsupersede undoes it."
        ),
        shape=agent.superseded,
    ),
    needs=Capability.WRITE,
)
async def supersede(host: MemoryHost, request: SupersedeArgs) -> dict[str, Any]:
    """Mark a crystal outdated by a newer one: search shows the newer in its place (undo: unsupersede)."""
    from memory.service import history

    return await history.supersede(host.running_store(), request, caller())


@commands(
    "memory.unsupersede",
    ShowArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/unsupersede", "memory"),
    local=True,
    cli=CliSpec("memory", "unsupersede", arguments=("id",), render=lambda c, _: f"{c['id']} is current again"),
    mcp=McpSpec("memory_unsupersede", shape=agent.current_again),
    needs=Capability.WRITE,
)
async def unsupersede(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """Make a superseded crystal current again; the node never supersedes it by the same crystal again."""
    from memory.service import history

    return await history.unsupersede(host.running_store(), request, caller())


@commands(
    "memory.edit",
    EditArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/edit", "memory"),
    local=True,
    cli=CliSpec(
        "memory",
        "edit",
        arguments=("id", "text"),
        convert={"text": text_or_stdin},
        render=lambda c, _: f"{c['id']} replaces {c['replaces']} (the old text is kept: memory show {c['replaces']})",
    ),
    mcp=McpSpec(
        "memory_edit",
        description=(
            "Correct the text of memory `id`: the new text becomes a new memory that replaces it in searches; the "
            "old text is kept in its history. The person's own memories only the person edits."
        ),
        shape=agent.edited,
    ),
    needs=Capability.WRITE,
)
async def edit(host: MemoryHost, request: EditArgs) -> dict[str, Any]:
    """Edit a crystal's text (`-` reads stdin): the new text replaces it, the old one is kept in its history."""
    from memory.service import history

    return await history.edit(host.running_store(), request, caller())


@commands(
    "skills.edit",
    SkillEditArgs,
    route=HttpRoute("POST", "/v1/skills/{id}/edit", "skills"),
    local=True,
    cli=CliSpec(
        "skills",
        "edit",
        arguments=("id",),
        render=lambda c, _: (
            f"{c['id']} v{(c['skill'] or {}).get('version', 1)} {c['lifecycle']} "
            f"tags [{' '.join((c['skill'] or {}).get('tags', ()))}] category {(c['skill'] or {}).get('category')}"
        ),
    ),
    needs=Capability.WRITE,
)
async def edit_skill(host: MemoryHost, request: SkillEditArgs) -> dict[str, Any]:
    """Tag, categorise, version (a new text) or freeze a local skill."""
    from memory.service import history

    return await history.edit_skill(host.running_store(), request, caller())
