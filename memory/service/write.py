"""Writing memory: remember a text, capture a conversation, pin, steer by feedback, forget or erase.
Each asks the authority table for what the caller may do (``memory.service.caller``)."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from ground.authority import Capability, Speaker, require
from memory.capture.capture import capture_conversations
from memory.capture.llm_extract import LlmExtractor
from memory.cognition.adopt import pin as keep
from memory.cognition.steering import give_feedback
from memory.emerging.skill_versions import skill_of
from memory.errors import InvalidRequest
from memory.governance.erase import erase
from memory.intake.store import IntakeStore
from memory.model import KNOWLEDGE_TYPES, Bounty, Feedback, Lifespan, NewCrystal, Origin
from memory.retrieval.query import parse_since
from memory.service.caller import Caller, refuse_unless_may_override
from memory.service.requests import CaptureArgs, FeedbackArgs, ForgetArgs, RememberArgs, ShowArgs
from memory.storage.store import MemoryStore
from memory.transfer.records import crystal_fields


class AnsweredBounty(Protocol):
    """The live bounty a skill answers, if any (``marketplace.catalog.bounties.answered_bounty``: the
    marketplace keeps the bounties, above memory, so the node hands its finder down)."""

    def __call__(
        self, store: MemoryStore, /, *, text: str, tags: Iterable[str], category: str, now_ms: int
    ) -> Awaitable[Bounty | None]: ...


async def remember(
    store: IntakeStore, args: RememberArgs, caller: Caller, *, answered_bounty: AnsweredBounty | None
) -> dict[str, Any]:
    """Store a text once (the same text returns the crystal it already is): ``created`` and the
    crystal. A skill records the live bounty it answers (``answered_bounty``; None: no bounty known)."""
    try:
        ttl_ms = -parse_since(args.ttl, 0) if args.ttl else None
        if args.pin and ttl_ms:
            raise InvalidRequest("a pinned memory is kept for good: give --pin or --ttl, not both")
        skill = skill_of(args.text, args.type, args.tags, args.category)
        # The agent can be talked into anything: what it stores is never the person's own words,
        # which alone outrank the person's statements (``ground.authority``), whatever origin it names.
        speaker = caller.speaker
        origin = Origin.SESSION if speaker is not Speaker.PERSON and args.origin is Origin.USER_INPUT else args.origin
        if args.pin:
            require(speaker, Capability.DIRECT, "memory.remember --pin")
        new = NewCrystal(
            args.text,
            semantic_type=args.type,
            origin=origin,
            # A stated importance is kept as a floor (README, "Keep this"); unstated, the default.
            importance=args.importance if args.importance is not None else 0.5,
            importance_floor=args.importance or 0.0,
            scope=args.scope,
            lifespan=Lifespan.PERMANENT if args.pin else Lifespan.TTL if ttl_ms else Lifespan.DECAY,
            skill=skill,
            ttl_ms=ttl_ms,
            actor=caller.actor,
            speaker=speaker,
        )
    except ValueError as exc:  # InvalidQuery (the ttl) is one too
        raise InvalidRequest(str(exc)) from None
    if args.type in KNOWLEDGE_TYPES and answered_bounty is not None:  # a skill records the live bounty it answers
        bounty = await answered_bounty(
            store, text=args.text, tags=skill.tags if skill else (), category=args.category or "", now_ms=store.now_ms()
        )
        new = replace(new, bounty=bounty)
    result = await store.remember(new)
    return {"created": result.created, "crystal": crystal_fields(result.crystal)}


#: A capture through a daemon of at most this many new crystals embeds them before it returns, where
#: a search right after it otherwise found them by keywords only until the background got to them.
CAPTURE_EMBEDS_NOW = 32


async def capture(
    store: IntakeStore, args: CaptureArgs, caller: Caller, *, embed: bool, extractor: LlmExtractor | None
) -> dict[str, Any]:
    """Capture a conversation: what is worth keeping is stored, typed, with where it came from.
    ``embed``: embed what was stored now; else a background loop does, but for a capture of at most
    ``CAPTURE_EMBEDS_NOW`` new crystals, embedded before it returns."""
    return await capture_conversations(
        store,
        messages=[m.model_dump(exclude_none=True) for m in args.messages],
        raw=args.conversation,
        fmt=args.format,
        session=args.session,
        actor=caller.actor,
        embed=embed,
        extractor=extractor,
        embed_own_up_to=CAPTURE_EMBEDS_NOW,
    )


async def pin(store: MemoryStore, args: ShowArgs, caller: Caller) -> dict[str, Any]:
    """Keep a stored crystal for good (a permanent lifespan), adopting its words as the person's."""
    return crystal_fields(await keep(store, args.id, actor=caller.actor, speaker=caller.speaker))


async def feedback(store: MemoryStore, args: FeedbackArgs, caller: Caller) -> dict[str, Any]:
    """Steer a crystal by what it turned out to be worth; only who may override the person calls the
    person's words wrong or outdated."""
    if args.feedback is not Feedback.USEFUL:  # it ranks the words lower and lets them fade: the person's
        await refuse_unless_may_override(store, args.id, f"calling it {args.feedback.value}", caller.speaker)
    return crystal_fields(await give_feedback(store, args.id, args.feedback, actor=caller.actor))


async def forget(store: MemoryStore, args: ForgetArgs, caller: Caller) -> dict[str, Any]:
    """Forget a crystal (it expires, purged after 30 days), or erase its text now (the person's alone)."""
    if args.erase:
        require(caller.speaker, Capability.ERASE, "memory.forget --erase")
        erased = await erase(store, args.id, actor=caller.actor, reason=args.reason)
        return {"forgotten": erased.crystal_id, "erased": True, "contexts_scrubbed": erased.contexts_scrubbed}
    await refuse_unless_may_override(store, args.id, "forgetting it", caller.speaker)
    crystal = await store.forget(args.id, actor=caller.actor, reason=args.reason)
    return {"forgotten": crystal.id, "erased": False}
