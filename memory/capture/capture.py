"""Capture a conversation into memory: what is worth keeping (``memory.capture.extract``) becomes
crystals, typed at ingest, with their speakers, time and the messages they came from.

Messages already captured in the same session are skipped (``captured_messages``), so capturing a
conversation again stores nothing new, and capturing it after it grew stores only what is new. A
piece whose text memory already holds is merged into that crystal (deduplicated by content), and
it is embedded, linked and checked for supersession like anything saved (the store's hook runs on
each new vector, under the authority rules).

Each piece records who said it (``ground.authority``): the person's own turns are
``PERSON_IN_TRANSCRIPT``, every other turn ``AGENT_IN_TRANSCRIPT``, a piece of several the weakest
of them, and a piece the [llm] extractor failed on no more than its road allows. Instruction-like
words from a turn that is not the person's are held in quarantine (``memory.capture.tripwire``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ground.authority import ROADS, Road, Speaker, weakest
from memory.capture.extract import Piece, extract
from memory.capture.formats import Conversation, ConversationFormat, Message, read_conversations, read_messages
from memory.capture.llm_extract import LlmExtractor
from memory.capture.sources import captured_ids, captured_keys, message_key, record_captured, stored_unrecorded
from memory.capture.tripwire import hold_reason
from memory.errors import CaptureFormatError
from memory.given_time import all_with_given_time
from memory.intake.store import IntakeStore
from memory.model import MAX_TEXT_CHARS, NewCrystal, Origin


@dataclass(frozen=True, slots=True)
class CaptureReport:
    session: str
    messages: int  # in the conversation as given
    new_messages: int  # not captured before
    stored: int  # new crystals
    merged: int  # pieces memory already held, word for word
    left_out: dict[str, int] = field(default_factory=dict)  # by why: small_talk, echo, system
    crystal_ids: tuple[str, ...] = ()  # the crystals of the new pieces, stored or merged into
    #: of those, how many the background still embeds (found by keywords only until it has)
    waiting_to_embed: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "session": self.session,
            "messages": self.messages,
            "new_messages": self.new_messages,
            "stored": self.stored,
            "merged": self.merged,
            "left_out": dict(self.left_out),
            "crystal_ids": list(self.crystal_ids),
            "waiting_to_embed": self.waiting_to_embed,
        }


async def capture(
    store: IntakeStore,
    conversation: Conversation,
    *,
    origin: Origin = Origin.SESSION,
    actor: str = "capture",
    embed: bool = True,
    extractor: LlmExtractor | None = None,
    family: str | None = None,
    embed_own_up_to: int = 0,
) -> CaptureReport:
    """Store what ``conversation`` holds worth keeping; messages captured before are skipped. With
    ``extractor`` (``[capture] extractor = "llm"``) a model picks the statements, offline on failure.
    ``family``: the session whose versions this conversation is one of (a watched file rewritten, or
    renamed after it was): a message with an id captured in any of them is skipped too. Grouped anew
    with the turns around it, it would otherwise be stored again in a piece of other words
    (``memory.capture.extract``). ``embed``: embed the whole backlog now; else the capture's own new
    crystals are embedded now when at most ``embed_own_up_to``, and the rest left to the background
    (the report's ``waiting_to_embed``)."""
    done = await captured_keys(store, conversation.session)
    if family is not None:
        done |= await captured_ids(store, family)
    source = f"capture:{conversation.session}"
    unrecorded = tuple(m for m in conversation.messages if message_key(m) not in done)
    held = await stored_unrecorded(store, source, unrecorded)  # stored before a kill, never recorded
    fresh = tuple(m for m in unrecorded if m.position not in held)
    if extractor is not None and fresh:
        extraction = await extractor.extract(conversation, fresh)
    else:
        extraction = extract(conversation, only=fresh)
    pieces = extraction.pieces
    by_position = {m.position: m for m in conversation.messages}
    # A conversation without times is still in order: a piece without one is said at its last
    # message's position, in milliseconds before now (the last message now), so "later" means
    # later in the conversation (search's later-update rule), never a random id between equals.
    untimed_base = store.now_ms() - len(conversation.messages)
    items = [
        NewCrystal(
            piece.text[:MAX_TEXT_CHARS],
            origin=Origin.INFERRED if piece.inferred else origin,
            created_at_ms=piece.ts_ms if piece.ts_ms is not None else untimed_base + piece.positions[-1] + 1,
            source=source,
            source_path=conversation.title,
            line_start=piece.positions[0] + 1,
            line_end=piece.positions[-1] + 1,
            actor=actor,
            context=piece.context,
            speaker=piece_speaker(conversation, piece.positions, piece.road, piece.framing),
            voice=piece.speakers[0][:100] if piece.speakers else None,
            quarantine=hold_reason(said(piece, by_position)),
        )
        for piece in pieces
    ]
    items = all_with_given_time(items, store.now_ms())  # a turn's time in the future or before 1970: clamped
    result = await store.remember_many(items) if items else None
    ids = result.ids if result is not None else ()
    into: dict[int, str] = {
        p: crystal_id for piece, crystal_id in zip(pieces, ids, strict=True) for p in piece.positions
    }
    rows: list[tuple[Message, str | None]] = [(m, held.get(m.position) or into.get(m.position)) for m in unrecorded]
    await record_captured(store, conversation.session, rows)
    waiting = 0
    if embed and result is not None and result.created:
        await store.embed_backlog()
    elif result is not None and result.created:
        # a daemon embeds in the background; a few pieces it embeds now, so an agent that captures
        # and then asks finds them by meaning (issue 52: for ~2 s after a capture, keyword only)
        own = list(dict.fromkeys(ids))
        waiting = len(own) - await store.embed_these(own) if len(own) <= embed_own_up_to else len(own)
    return CaptureReport(
        session=conversation.session,
        messages=len(conversation.messages),
        new_messages=len(fresh),
        stored=result.created if result is not None else 0,
        merged=result.duplicates if result is not None else 0,
        left_out=extraction.left_out,
        crystal_ids=tuple(dict.fromkeys(ids)),
        waiting_to_embed=max(0, waiting),
    )


async def capture_conversations(
    store: IntakeStore,
    *,
    messages: Sequence[Mapping[str, Any]] = (),
    raw: str | None = None,
    fmt: ConversationFormat | None = None,
    session: str | None = None,
    actor: str = "capture",
    embed: bool = True,
    extractor: LlmExtractor | None = None,
    embed_own_up_to: int = 0,
) -> dict[str, Any]:
    """Capture ``messages`` (chat form) or ``raw`` (a file's text, in ``fmt`` or the format its
    shape shows): one report per conversation, and their totals."""
    if bool(messages) == bool(raw):
        raise CaptureFormatError("give the conversation's messages, or its file's text, not both and not neither")
    if raw is not None and raw.strip():
        conversations = read_conversations(raw, fmt, session=session or "")
    else:
        conversations = [read_messages(messages, session=session or "")]
    reports = []
    for conversation in conversations:
        if not conversation.session:
            conversation = replace(conversation, session=default_session(conversation))
        reports.append(
            await capture(
                store, conversation, actor=actor, embed=embed, extractor=extractor, embed_own_up_to=embed_own_up_to
            )
        )
    return {
        "conversations": [r.as_dict() for r in reports],
        "stored": sum(r.stored for r in reports),
        "merged": sum(r.merged for r in reports),
        "new_messages": sum(r.new_messages for r in reports),
        "left_out": sum(sum(r.left_out.values()) for r in reports),
        "waiting_to_embed": sum(r.waiting_to_embed for r in reports),
    }


def turn_speaker(message: Message, road: Road | None = None) -> Speaker:
    """Who a transcript's turn speaks for (``ground.authority``): the person's own turns are the
    person's words in a transcript; every other turn (the assistant's, a tool's, a sub-agent's, a
    command's output) is not. A road that allows less (``Road.CAPTURE_EXTRACTOR_FAILED``) caps it."""
    own = Speaker.PERSON_IN_TRANSCRIPT if message.person else Speaker.AGENT_IN_TRANSCRIPT
    capped = ROADS[road] if road is not None else None
    return weakest((own, capped)) if capped is not None else own


def piece_speaker(
    conversation: Conversation, positions: Sequence[int], road: Road | None = None, framing: Sequence[int] = ()
) -> Speaker:
    """A piece of several turns carries no more authority than its weakest turn, but for the
    questions that only frame it (``memory.capture.extract.frames``). Positions are the
    conversation's own (a watched file's chunk starts past 0): messages are found by position."""
    by_position = {m.position: m for m in conversation.messages}
    spoken = [p for p in positions if p not in framing] or list(positions)
    return weakest(turn_speaker(by_position[p], road) for p in spoken)


def said(piece: Piece, by_position: Mapping[int, Message]) -> list[tuple[Speaker, str]]:
    """What the tripwire reads of a piece: each of its turns with its speaker, and a model's
    statement (its own words, not the turns') with the piece's."""
    turns = [(turn_speaker(by_position[p], piece.road), by_position[p].text) for p in piece.positions]
    if piece.inferred:
        turns.append((weakest(s for s, _ in turns), piece.text))
    return turns


def default_session(conversation: Conversation) -> str:
    """A session id for a conversation whose format has none: from its first message, so the same
    conversation (and the same one grown longer) gets the same id every time."""
    first = conversation.messages[0] if conversation.messages else None
    seed = f"{first.role}\n{first.message_id or ''}\n{first.text}" if first else ""
    return "conv-" + hashlib.sha256(seed.encode()).hexdigest()[:16]
