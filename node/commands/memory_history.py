"""How a stored crystal changes: its text edited (with the old text kept), its type corrected, a link
added by hand, marking it outdated or current again, and a skill's tags, versions and freezing. Each
keeps who did it in the attribution chain, and the agent may not change the person's own words
(``ground.authority``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ground.authority import Capability
from node.actor import current_actor, speaker_of
from node.commands.memory import MemoryHost, text_or_stdin
from node.commands.memory_requests import EditArgs, LinkArgs, RetypeArgs, ShowArgs, SkillEditArgs, SupersedeArgs
from node.commands.registry import CommandSet, HttpRoute, McpSpec
from node.commands.texts import agent
from node.commands.texts.cli_form import CliSpec

if TYPE_CHECKING:
    from memory.storage.store import MemoryStore

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
    from memory.cognition.retype import retype as correct
    from node.commands.memory_service import crystal_json

    store = host.running_store()
    await refuse_unless_may_override(store, request.id, "retyping it")
    actor = current_actor()
    return crystal_json(
        await correct(store, request.id, request.type, actor=actor, speaker=speaker_of(actor), typer=store.typer)
    )


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
    from memory.graph import link as add_link

    await add_link(host.running_store(), request.id, request.to, request.type, request.weight, actor=current_actor())
    return {"link": f"{request.id} {request.type.value} {request.to}"}


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
    from memory.supersession.detect import supersede as mark
    from node.commands.memory_service import crystal_json

    store, actor = host.running_store(), current_actor()
    await refuse_unless_may_override(store, request.id, "marking it outdated")
    return crystal_json(await mark(store, request.id, request.by, reason="marked by hand", actor=actor))


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
    from memory.supersession.detect import unsupersede as undo
    from node.commands.memory_service import crystal_json

    store = host.running_store()
    # Bringing back what the person's words replaced undoes the person's correction, and the
    # node never supersedes it again by the same crystal: both ends are the person's to decide.
    await refuse_unless_may_override(store, request.id, "making it current again")
    old = await store.get(request.id)
    if old.superseded is not None:
        await refuse_unless_may_override(store, old.superseded.by, f"undoing what it replaced ({request.id})")
    return crystal_json(await undo(store, request.id, actor=current_actor()))


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
    from memory.supersession.edits import edit_text
    from node.actor import PEOPLE
    from node.commands.memory_service import crystal_json

    store, actor = host.running_store(), current_actor()
    await refuse_unless_may_override(store, request.id, "editing it")
    new = await edit_text(store, request.id, request.text, actor=actor, by_person=actor in PEOPLE)
    return {**crystal_json(new), "replaces": request.id}


async def refuse_unless_may_override(store: MemoryStore, crystal_id: str, doing: str) -> None:
    """``NotAllowed`` unless the caller may override the person, when the crystal is the person's own:
    the agent can be talked into anything, so it never changes the person's words (``ground.authority``)."""
    from node.actor import current_speaker
    from node.commands.memory_service import refuse_unless_may_override as refuse

    await refuse(store, crystal_id, doing, current_speaker())


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
    from memory.supersession import skill_edits as skill_versions
    from node.commands.memory_service import crystal_json, refuse_unless_may_override

    store, actor = host.running_store(), current_actor()
    await refuse_unless_may_override(store, request.id, "editing the skill", speaker_of(actor))
    crystal = await store.get(request.id)
    if request.tags is not None or request.category is not None or request.text is not None:
        crystal = await skill_versions.edit_skill(
            store,
            request.id,
            tags=request.tags,
            category=request.category,
            text=request.text,
            actor=actor,
            speaker=speaker_of(actor),
        )
    if request.freeze:
        crystal = await skill_versions.freeze(store, crystal.id, actor=actor)
    return crystal_json(crystal)
