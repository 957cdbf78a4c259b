"""How a stored crystal changes: its type corrected, a link added by hand, marked outdated or current
again, its text edited (the old text kept), a skill's tags, versions and freezing, a merge undone.
Each keeps who did it, and only who may override the person changes the person's own words."""

from __future__ import annotations

from typing import Any

from memory.cognition.retype import retype as correct
from memory.dynamics.consolidation import unmerge as undo_merge
from memory.emerging import skill_versions
from memory.graph.links import link as add_link
from memory.intake.store import IntakeStore
from memory.service.caller import Caller, refuse_unless_may_override
from memory.service.requests import EditArgs, LinkArgs, RetypeArgs, ShowArgs, SkillEditArgs, SupersedeArgs
from memory.storage.store import MemoryStore
from memory.supersession.detect import supersede as mark
from memory.supersession.detect import unsupersede as undo
from memory.supersession.edits import edit_text
from memory.transfer.records import crystal_fields


async def retype(store: IntakeStore, args: RetypeArgs, caller: Caller) -> dict[str, Any]:
    """Correct a crystal's semantic type; the correction is kept as an example the typer learns from."""
    await refuse_unless_may_override(store, args.id, "retyping it", caller.speaker)
    corrected = await correct(store, args.id, args.type, actor=caller.actor, speaker=caller.speaker, typer=store.typer)
    return crystal_fields(corrected)


async def link(store: MemoryStore, args: LinkArgs, caller: Caller) -> dict[str, Any]:
    """Link two crystals by hand."""
    await add_link(store, args.id, args.to, args.type, args.weight, actor=caller.actor)
    return {"link": f"{args.id} {args.type.value} {args.to}"}


async def supersede(store: MemoryStore, args: SupersedeArgs, caller: Caller) -> dict[str, Any]:
    """Mark a crystal outdated by a newer one: search shows the newer in its place."""
    await refuse_unless_may_override(store, args.id, "marking it outdated", caller.speaker)
    return crystal_fields(await mark(store, args.id, args.by, reason="marked by hand", actor=caller.actor))


async def unsupersede(store: MemoryStore, args: ShowArgs, caller: Caller) -> dict[str, Any]:
    """Make a superseded crystal current again; it is never superseded by the same crystal again."""
    # Bringing back what the person's words replaced undoes the person's correction, and the
    # node never supersedes it again by the same crystal: both ends are the person's to decide.
    await refuse_unless_may_override(store, args.id, "making it current again", caller.speaker)
    old = await store.get(args.id)
    if old.superseded is not None:
        doing = f"undoing what it replaced ({args.id})"
        await refuse_unless_may_override(store, old.superseded.by, doing, caller.speaker)
    return crystal_fields(await undo(store, args.id, actor=caller.actor))


async def edit(store: IntakeStore, args: EditArgs, caller: Caller) -> dict[str, Any]:
    """A crystal's text corrected: the new text replaces it, and the old one is kept in its history."""
    await refuse_unless_may_override(store, args.id, "editing it", caller.speaker)
    new = await edit_text(store, args.id, args.text, actor=caller.actor, by_person=caller.is_person)
    return {**crystal_fields(new), "replaces": args.id}


async def edit_skill(store: IntakeStore, args: SkillEditArgs, caller: Caller) -> dict[str, Any]:
    """Tag, categorise, version (a new text) or freeze a local skill (freezing after the rest)."""
    await refuse_unless_may_override(store, args.id, "editing the skill", caller.speaker)
    crystal = await store.get(args.id)
    if args.tags is not None or args.category is not None or args.text is not None:
        crystal = await skill_versions.edit_skill(
            store,
            args.id,
            tags=args.tags,
            category=args.category,
            text=args.text,
            actor=caller.actor,
            speaker=caller.speaker,
        )
    if args.freeze:
        crystal = await skill_versions.freeze(store, crystal.id, actor=caller.actor)
    return crystal_fields(crystal)


async def unmerge(store: MemoryStore, args: ShowArgs, caller: Caller) -> dict[str, Any]:
    """Undo a merge: restore a crystal a merge archived to what it was (``StoreError``, a 400, when it
    was not merged or is no longer archived)."""
    winner = await undo_merge(store, args.id, actor=caller.actor)
    return {"restored": args.id, "merged_into": winner}
