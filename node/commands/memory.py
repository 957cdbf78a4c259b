"""The memory commands: search, remember, show, forget, quarantine, hormones, consolidation, dreams.

Each runs on a ``MemoryHost``: the daemon's memory part, or the local client's part opened on
the files when no daemon runs (every one here is ``local``). The store and the service functions
are imported inside the handlers: describing these commands must stay cheap for the CLI.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from memory.model import SemanticType
from node.commands.memory_requests import (
    BootstrapArgs,
    ConsolidateArgs,
    EventArgs,
    FeedbackArgs,
    ForgetArgs,
    LinkArgs,
    NoteArgs,
    QuarantineArgs,
    RememberArgs,
    RetypeArgs,
    SearchArgs,
    ShowArgs,
    SkillEditArgs,
    SupersedeArgs,
)
from node.commands.registry import CliSpec, CommandSet, HttpRoute, NoArgs, Request
from node.runtime.actor import DASHBOARD, current_actor

if TYPE_CHECKING:
    from memory.retrieval.query import Weights
    from memory.storage.store import MemoryStore
    from memory.working_memory.memory_md import WorkingMemoryFiles
    from node.parts.metrics import NodeMetrics


class MemoryHost(Protocol):
    """What the memory commands need of the part that runs them (``node.parts.memory.MemoryPart``)."""

    files: WorkingMemoryFiles
    weights: Weights
    metrics: NodeMetrics | None

    def running_store(self) -> MemoryStore: ...

    async def consolidate_now(self, *, dry_run: bool = False) -> dict[str, Any]: ...

    async def dream_now(self) -> dict[str, Any]: ...


MEMORY = CommandSet("memory")
commands = MEMORY.command


@commands("memory.search", SearchArgs, route=HttpRoute("POST", "/v1/memory/search", "memory"), local=True)
async def search(host: MemoryHost, request: SearchArgs) -> list[dict[str, Any]]:
    """Search memory (every mode and filter)."""
    from node.commands import memory_service as service

    started = time.perf_counter()
    # A dashboard page's search is never a curiosity gap: any page on this machine could make one,
    # and gaps reach MEMORY.md (issue 27).
    record_gap = current_actor() != DASHBOARD
    hits = await service.search_memory(host.running_store(), request, host.weights, record_gap=record_gap)
    if host.metrics is not None:
        host.metrics.search_seconds.labels(request.mode.value).observe(time.perf_counter() - started)
    return hits


@commands("memory.remember", RememberArgs, route=HttpRoute("POST", "/v1/memory", "memory"), local=True)
async def remember(host: MemoryHost, request: RememberArgs) -> dict[str, Any]:
    """Remember a text (stored once)."""
    from node.commands import memory_service as service

    return await service.remember(host.running_store(), request, actor=current_actor())


@commands(
    "memory.retype",
    RetypeArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/type", "memory"),
    local=True,
    cli=CliSpec(
        "memory",
        "retype",
        arguments=("id", "type"),
        render=lambda c: f"{c['id']} is now {c['semantic_type']} ({c['epistemic_layer']}); the typer learned it",
    ),
)
async def retype(host: MemoryHost, request: RetypeArgs) -> dict[str, Any]:
    """Correct a crystal's semantic type; the node keeps the correction as an example and learns from it."""
    from memory.cognition.retype import retype as correct
    from node.commands.memory_service import crystal_json

    return crystal_json(await correct(host.running_store(), request.id, request.type, actor=current_actor()))


@commands(
    "memory.pin",
    ShowArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/pin", "memory"),
    local=True,
    cli=CliSpec("memory", "pin", arguments=("id",), render=lambda c: f"{c['id']} is pinned: {c['lifespan']}"),
)
async def pin(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """Keep a stored crystal for good: a permanent lifespan, no decay and no expiry."""
    from memory.governance.keep import pin as keep
    from node.commands.memory_service import crystal_json

    return crystal_json(await keep(host.running_store(), request.id, actor=current_actor()))


@commands(
    "memory.feedback",
    FeedbackArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/feedback", "memory"),
    local=True,
    cli=CliSpec(
        "memory",
        "feedback",
        arguments=("id", "feedback"),
        render=lambda c: f"{c['id']} steering reward {c['steering_reward']:+.3f}",
    ),
)
async def feedback(host: MemoryHost, request: FeedbackArgs) -> dict[str, Any]:
    """Say a crystal was useful, wrong or outdated: its steering reward moves, and with it its rank and life."""
    from memory.cognition.steering import give_feedback
    from node.commands.memory_service import crystal_json

    return crystal_json(await give_feedback(host.running_store(), request.id, request.feedback, actor=current_actor()))


class GapsArgs(Request):
    closed: bool = Field(default=False, description="The gaps already filled, latest first, instead of the open ones.")
    limit: int = Field(default=50, ge=1, le=1000)


def _gap_lines(gaps: list[dict[str, Any]]) -> str:
    if not gaps:
        return "no curiosity gaps"
    return "\n".join(f"{g['asked']:>4}x  {g['query']}" + (f"  (filled by {g['closed_by']})" if g["closed_by"] else "")
                     for g in gaps)  # fmt: skip


@commands(
    "memory.gaps",
    GapsArgs,
    route=HttpRoute("GET", "/v1/memory/gaps", "memory"),
    local=True,
    cli=CliSpec("memory", "gaps", render=_gap_lines),
)
async def gaps(host: MemoryHost, request: GapsArgs) -> list[dict[str, Any]]:
    """Curiosity gaps: searches memory could not answer, most asked first (or those since filled)."""
    from dataclasses import asdict

    from memory.cognition.curiosity import Curiosity

    curiosity = host.running_store().curiosity
    if not isinstance(curiosity, Curiosity):
        raise ValueError("curiosity is off for this store")
    return [asdict(g) for g in await curiosity.gaps(limit=request.limit, closed=request.closed)]


@commands(
    "memory.link",
    LinkArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/links", "memory"),
    local=True,
    cli=CliSpec("memory", "link", arguments=("id", "to", "type"), render=lambda d: f"linked {d['link']}"),
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
        render=lambda c: f"{c['id']} is superseded by {c['superseded']['by']}",
    ),
)
async def supersede(host: MemoryHost, request: SupersedeArgs) -> dict[str, Any]:
    """Mark a crystal outdated by a newer one: search shows the newer in its place (undo: unsupersede)."""
    from memory.supersession.authority import is_the_persons
    from memory.supersession.detect import supersede as mark
    from node.commands.memory_service import crystal_json
    from node.errors import PersonOnly
    from node.runtime.actor import PEOPLE

    store = host.running_store()
    actor = current_actor()
    if actor not in PEOPLE and is_the_persons(await store.get(request.id)):
        raise PersonOnly(
            f"{request.id} is the person's own (their words, a directive or pinned): only the person marks it "
            "outdated; ask them"
        )
    return crystal_json(await mark(store, request.id, request.by, reason="marked by hand", actor=actor))


@commands(
    "memory.unsupersede",
    ShowArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/unsupersede", "memory"),
    local=True,
    cli=CliSpec("memory", "unsupersede", arguments=("id",), render=lambda c: f"{c['id']} is current again"),
)
async def unsupersede(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """Make a superseded crystal current again; the node never supersedes it by the same crystal again."""
    from memory.supersession.detect import unsupersede as undo
    from node.commands.memory_service import crystal_json

    return crystal_json(await undo(host.running_store(), request.id, actor=current_actor()))


@commands(
    "skills.edit",
    SkillEditArgs,
    route=HttpRoute("POST", "/v1/skills/{id}/edit", "skills"),
    local=True,
    cli=CliSpec(
        "skills",
        "edit",
        arguments=("id",),
        render=lambda c: (
            f"{c['id']} v{(c['skill'] or {}).get('version', 1)} {c['lifecycle']} "
            f"tags [{' '.join((c['skill'] or {}).get('tags', ()))}] category {(c['skill'] or {}).get('category')}"
        ),
    ),
)
async def edit_skill(host: MemoryHost, request: SkillEditArgs) -> dict[str, Any]:
    """Tag, categorise, version (a new text) or freeze a local skill."""
    from memory import skill_versions
    from node.commands.memory_service import crystal_json

    store, actor = host.running_store(), current_actor()
    crystal = await store.get(request.id)
    if request.tags is not None or request.category is not None or request.text is not None:
        crystal = await skill_versions.edit_skill(
            store, request.id, tags=request.tags, category=request.category, text=request.text, actor=actor
        )
    if request.freeze:
        crystal = await skill_versions.freeze(store, crystal.id, actor=actor)
    return crystal_json(crystal)


@commands("memory.stats", NoArgs, route=HttpRoute("GET", "/v1/memory/stats", "memory"), local=True)
async def stats(host: MemoryHost, request: NoArgs) -> dict[str, Any]:
    """Counts by lifecycle, type, origin; backlog."""
    return await host.running_store().stats()


class CountArgs(Request):
    type: SemanticType | None = Field(default=None, description="Count only crystals of this semantic type.")


@commands(
    "memory.count",
    CountArgs,
    route=HttpRoute("GET", "/v1/memory/count", "memory"),
    local=True,
    cli=CliSpec("memory", "count", render=lambda doc: f"{doc['count']} crystals"),
)
async def count(host: MemoryHost, request: CountArgs) -> dict[str, Any]:
    """How many crystals memory holds (of one type, if given)."""
    from memory.storage.counts import crystal_total

    kind = request.type.value if request.type else None
    return {"count": await crystal_total(host.running_store().reader(), kind), "type": kind}


@commands("memory.quarantine", QuarantineArgs, route=HttpRoute("GET", "/v1/memory/quarantine", "memory"), local=True)
async def quarantine(host: MemoryHost, request: QuarantineArgs) -> list[dict[str, Any]]:
    """Peer content held back from the agent (or approved, rejected)."""
    from node.commands import memory_service as service

    return await service.quarantine_list(host.running_store(), request)


@commands(
    "memory.quarantine.approve",
    ShowArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/approve", "memory"),
    local=True,
    person_only=True,
)
async def approve(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """Release held content."""
    from node.commands import memory_service as service

    return await service.quarantine_approve(host.running_store(), request, actor=current_actor())


@commands(
    "memory.quarantine.reject",
    ShowArgs,
    route=HttpRoute("POST", "/v1/memory/{id}/reject", "memory"),
    local=True,
    person_only=True,
)
async def reject(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """Reject held content."""
    from node.commands import memory_service as service

    return await service.quarantine_reject(host.running_store(), request, actor=current_actor())


@commands("memory.show", ShowArgs, route=HttpRoute("GET", "/v1/memory/{id}", "memory"), local=True)
async def show(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """One crystal with links, provenance, audit."""
    from node.commands import memory_service as service

    return await service.show(host.running_store(), request)


@commands("memory.forget", ForgetArgs, route=HttpRoute("DELETE", "/v1/memory/{id}", "memory"), local=True)
async def forget(host: MemoryHost, request: ForgetArgs) -> dict[str, Any]:
    """Forget a crystal (audited)."""
    from node.commands import memory_service as service

    return await service.forget(host.running_store(), request, actor=current_actor())


@commands(
    "memory.consolidate",
    ConsolidateArgs,
    route=HttpRoute("POST", "/v1/memory/consolidate", "memory"),
    local=True,
    timeout_s=600,
)
async def consolidate(host: MemoryHost, request: ConsolidateArgs) -> dict[str, Any]:
    """Run a consolidation cycle now."""
    return await host.consolidate_now(dry_run=request.dry_run)


@commands("memory.unmerge", ShowArgs, route=HttpRoute("POST", "/v1/memory/{id}/unmerge", "memory"), local=True)
async def unmerge(host: MemoryHost, request: ShowArgs) -> dict[str, Any]:
    """Undo a merge."""
    from memory.dynamics.consolidation import unmerge as undo_merge
    from memory.errors import StoreError

    try:
        winner = await undo_merge(host.running_store(), request.id, actor=current_actor())
    except StoreError as exc:  # not merged, or no longer archived: the caller's mistake
        raise ValueError(str(exc)) from None
    return {"restored": request.id, "merged_into": winner}


@commands("memory.hormones", NoArgs, route=HttpRoute("GET", "/v1/hormones", "memory"), local=True)
async def hormones(host: MemoryHost, request: NoArgs) -> dict[str, Any]:
    """The hormonal state."""
    from node.commands import memory_service as service

    return service.hormone_doc(host.running_store())


@commands("memory.event", EventArgs, route=HttpRoute("POST", "/v1/hormones/events", "memory"), local=True)
async def event(host: MemoryHost, request: EventArgs) -> dict[str, Any]:
    """Tell the node what happened."""
    from node.commands import memory_service as service

    return await service.observe_events(host.running_store(), request.events)


@commands("wm.note", NoteArgs, route=HttpRoute("POST", "/v1/working-memory/notes", "working memory"), local=True)
async def note(host: MemoryHost, request: NoteArgs) -> dict[str, Any]:
    """A working-memory note (durable, searchable)."""
    from memory.working_memory.dream import working_memory_note
    from node.commands.memory_service import crystal_json

    crystal = await working_memory_note(host.running_store(), host.files, request.text, request.importance)
    return crystal_json(crystal)


@commands(
    "wm.bootstrap", BootstrapArgs, route=HttpRoute("GET", "/v1/working-memory/bootstrap", "working memory"), local=True
)
async def bootstrap(host: MemoryHost, request: BootstrapArgs) -> dict[str, Any]:
    """The text for an agent's system prompt."""
    from memory.working_memory.dream import directives
    from memory.working_memory.memory_md import bootstrap_text

    told = await directives(host.running_store())
    return {"text": bootstrap_text(host.files, request.context_window, told)}


@commands("wm.show", NoArgs, route=HttpRoute("GET", "/v1/working-memory", "working memory"), local=True)
async def working_memory(host: MemoryHost, request: NoArgs) -> dict[str, Any]:
    """MEMORY.md as it is, what the last dream changed in it, and the scratch notes waiting for the next."""
    from node.commands.memory_service import working_memory_report

    return working_memory_report(host.files)


@commands(
    "wm.dream",
    NoArgs,
    route=HttpRoute("POST", "/v1/working-memory/dream", "working memory"),
    local=True,
    timeout_s=600,
)
async def dream(host: MemoryHost, request: NoArgs) -> dict[str, Any]:
    """Run the dream cycle now."""
    return await host.dream_now()
