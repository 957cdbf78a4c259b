"""What of a conversation is worth keeping, and in which pieces (pure: messages in, pieces out).

The offline extractor is deterministic and reads only the words:

- **Left out:** system and tool messages; small talk and acknowledgements (a message made only of
  words like "thanks", "ok", "sounds good", "haha"); an assistant repeating what the user just said
  (most of its content words are the user's).
- **Pieces:** a message that says something starts a piece; the speaker's own follow-ups and a
  short reply from the other side join it ("Where did you go?" / "Lisbon, last May"), up to
  ``max_chars``. A reply is what makes a question findable, and a piece of two turns keeps the
  store smaller than one crystal per message (issue 30: at most 60 % as many crystals as messages).
  But a piece is one authority's words (``ground.authority``): the person's turns never join the
  assistant's statements, a tool's output or a quoted page, so the person's words are never marked,
  held or outranked for what someone else said beside them. Only a short question of the other
  side's that reads like no instruction frames the person's piece (``frames``), lending it no speaker.
- **Each piece** keeps the positions and ids of the messages it came from, its speakers and its
  time; the message before it travels as context, so a short piece stays findable by meaning.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ground.authority import Road
from memory.capture.formats import Conversation, Message

_WORD = re.compile(r"[a-z0-9']+")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that carry no fact on their own: a message made only of these is small talk.
_FILLER = _words(
    "ok okay k kk thanks thank thx ty you so much very great cool nice awesome amazing wow sounds"
    " good lol haha hahaha hehe lmao sure np no problem bye goodbye hi hello hey welcome glad to"
    " help yep yeah yes got it perfect alright right fine gotcha indeed totally agreed agree"
    " exactly true absolutely definitely of course same here me too love that this oh ah hmm mhm uh"
    " um see you later take care night morning good congrats congratulations appreciate it that's"
    " awesome great idea will do how can i help what for today anything else let me know happy is there with"
    " understood noted roger ack acknowledged"
)
_STOP = _words(
    "the a an and or but of to in on at for with is are was were be been it this that i you he she"
    " we they my your our their me him her us them so do did does have has had not no yes as by"
    " from"
)
#: How a conversation is closed: "talk soon", "catch you later", "have a good one", "bye for now".
_CLOSINGS = re.compile(
    r"\b(?:talk|speak|chat)(?: to you)? (?:soon|later|tomorrow)\b|\bcatch you later\b|\bttyl\b|"
    r"\bsee (?:you|ya)(?: later| soon| tomorrow| then)?\b|\bhave a (?:good|great|nice|lovely) "
    r"(?:one|day|night|evening|weekend)\b|\bgood ?night\b|\bbye(?: for now)?\b|\bcheers\b|\btake care\b|"
    r"\bthat'?s (?:all|it)(?: for now)?\b"
)
#: Small talk that still answers a question just asked ("Did the deploy go out?" "Yes").
_ANSWERS = _words("yes no yep yeah nope sure right true exactly definitely absolutely agreed agree")
#: An assistant message whose content words are at least this share the previous user message's
#: repeats the user.
ECHO_SHARE = 0.8
SHORT_REPLY_CHARS = 200
#: The longest question of the other side's that may frame the person's piece: a question, not a
#: page (what it carries lands in the person's piece, unmarked, so it is kept to a line).
FRAMING_CHARS = 100
MAX_PIECE_CHARS = 700
#: Messages further apart than this are never one piece.
MAX_GAP_MS = 30 * 60_000


@dataclass(frozen=True, slots=True)
class Piece:
    """Messages that become one crystal."""

    text: str  # "speaker: words" per message, one per line
    positions: tuple[int, ...]
    message_ids: tuple[str | None, ...]
    speakers: tuple[str, ...]
    ts_ms: int | None
    context: str | None  # the message before the piece
    inferred: bool = False  # a model's statement (the [llm] extractor), not the messages' own words
    # The road it came by when that, not its turns, decides its speaker: pieces of a window the
    # [llm] extractor failed on (``Road.CAPTURE_EXTRACTOR_FAILED``), whatever their turns' roles.
    road: Road | None = None
    # Positions of questions that only frame the person's words (``frames``): they lend no speaker.
    framing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Extraction:
    pieces: tuple[Piece, ...]
    left_out: dict[str, int]  # why messages were left out: small_talk, echo, system, empty


def extract(
    conversation: Conversation, *, only: tuple[Message, ...] | None = None, max_chars: int = MAX_PIECE_CHARS
) -> Extraction:
    """The pieces of ``conversation`` worth keeping, from ``only`` its messages when given (the
    others, captured before, still give context)."""
    left_out = {"system": 0, "small_talk": 0, "echo": 0}
    kept: list[Message] = []
    previous_user: Message | None = None
    asked = False  # the message before was a question
    for message in conversation.messages if only is None else only:
        if message.role in ("system", "tool"):
            left_out["system"] += 1
            continue
        answers = asked and bool(_ANSWERS & set(_WORD.findall(message.text.lower())))
        asked = message.text.rstrip().endswith("?")
        if is_small_talk(message.text) and not answers:
            left_out["small_talk"] += 1
            continue
        if message.role == "assistant" and previous_user is not None and repeats(message.text, previous_user.text):
            left_out["echo"] += 1
            continue
        if message.role == "user":
            previous_user = message
        kept.append(message)
    pieces: list[Piece] = []
    group: list[Message] = []
    asked_first: list[Message] = []  # the other side's question the person's group answers
    held: Message | None = None  # such a question, until the next message shows whether it is answered
    # By position, not by index: a watched file's new chunk starts past its first message.
    by_position = {m.position: m for m in conversation.messages}

    def flush() -> None:
        nonlocal group, asked_first
        if group:
            pieces.append(_piece(group, by_position, asked_first))
        group, asked_first = [], []

    for message in kept:
        if held is not None:
            if message.person and message.position == held.position + 1 and _close(held, message):
                group, asked_first, held = [message], [held], None
                continue
            pieces.append(_piece([held], by_position))  # unanswered: its own piece, as before
            held = None
        if group and _joins(group, message, max_chars):
            group.append(message)
            continue
        if _answers_last(group, message):
            question = group.pop()  # "..., Do you have a budget in mind?" then the person's answer
            flush()
            group, asked_first = [message], [question]
            continue
        flush()
        if may_frame(message):
            held = message  # the person's answer may follow: then it leads, and this frames it
        else:
            group = [message]
    flush()
    if held is not None:
        pieces.append(_piece([held], by_position))
    return Extraction(tuple(pieces), left_out)


def asked_now(message: Message) -> bool:
    return message.text.rstrip().endswith("?")


def is_small_talk(text: str) -> bool:
    """A message made only of acknowledgement, greeting and closing words (and emoji, punctuation):
    "perfect thanks, talk soon!" says nothing to keep."""
    words = _WORD.findall(_CLOSINGS.sub(" ", text.lower()))
    return len(words) <= 8 and all(word in _FILLER for word in words)


def repeats(reply: str, said: str) -> bool:
    """Whether ``reply`` mostly restates ``said`` (by content words)."""
    words = _content(reply)
    if len(words) < 3:
        return False
    return len(words & _content(said)) / len(words) >= ECHO_SHARE


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry content (lower case, no stop words, longer than two letters)."""
    return _content(text)


def _joins(group: list[Message], message: Message, max_chars: int) -> bool:
    """Whether ``message`` continues the piece ``group`` started."""
    size = sum(len(m.text) for m in group) + len(message.text)
    if size > max_chars:
        return False
    last = group[-1]
    if message.position != last.position + 1:
        return False  # something was left out between them (an echo, small talk): a new piece
    if message.person != group[0].person and not frames(message, group):
        return False  # a piece is one authority's words (ground.authority): the person's never mix with others'
    if last.ts_ms is not None and message.ts_ms is not None and message.ts_ms - last.ts_ms > MAX_GAP_MS:
        return False
    speakers = {m.speaker for m in group}
    if message.speaker == last.speaker:
        return True  # the same speaker going on
    short = len(message.text) <= SHORT_REPLY_CHARS
    # One reply from the other side, when it is short: an answer, a reaction with a fact in it; and
    # when that reply was a question, the short answer to it too ("Where is it hosted?" "Netlify").
    answers = len(group) >= 2 and last.text.rstrip().endswith("?") and message.speaker != last.speaker
    return short and (len(speakers) == 1 or answers)


def may_frame(message: Message) -> bool:
    """Whether ``message``, not the person's, is a short question that asserts and orders nothing
    (``frames``): asked just before the person's answer, it frames that answer."""
    from memory.capture.tripwire import findings

    return (
        not message.person and asked_now(message) and len(message.text) <= FRAMING_CHARS and not findings(message.text)
    )


def _answers_last(group: list[Message], message: Message) -> bool:
    """Whether ``message``, the person's, answers the question the other side's ``group`` ends with."""
    return (
        len(group) > 1
        and message.person
        and not group[0].person
        and message.position == group[-1].position + 1
        and may_frame(group[-1])
        and _close(group[-1], message)
    )


def _close(question: Message, answer: Message) -> bool:
    return question.ts_ms is None or answer.ts_ms is None or answer.ts_ms - question.ts_ms <= MAX_GAP_MS


def frames(message: Message, group: list[Message]) -> bool:
    """Whether ``message``, not the person's, only frames the person's piece ``group``: a short
    question of the other side's ("Where will it be hosted?"), which asserts and orders nothing and
    makes the answer after it findable. It joins without lending the piece its speaker; a question
    that reads like instructions never frames (``memory.capture.tripwire``)."""
    from memory.capture.tripwire import findings

    return (
        group[0].person
        and not message.person
        and asked_now(message)
        and len(message.text) <= FRAMING_CHARS
        and not findings(message.text)
    )


def _piece(group: list[Message], by_position: dict[int, Message], asked_first: Sequence[Message] = ()) -> Piece:
    """The piece of ``group``'s messages; ``asked_first``: the other side's question it answers, which
    follows the person's words ("around 1500 euros each" / "(in answer to assistant: Do you have a
    budget in mind?)"), so the piece leads with what the person said (issue 52)."""
    first = asked_first[0] if asked_first else group[0]
    before = by_position.get(first.position - 1)
    context = f"{before.speaker}: {before.text}"[:1_900] if before is not None else None
    # The person's own words alone read as they were said; a piece with others says who said what.
    alone = all(m.role == "user" and m.speaker == "user" for m in group)
    lines = [m.text if alone else f"{m.speaker}: {m.text}" for m in group]
    lines += [f"(in answer to {m.speaker}: {m.text})" for m in asked_first]
    return Piece(
        text="\n".join(lines),
        positions=tuple(m.position for m in [*asked_first, *group]),
        message_ids=tuple(m.message_id for m in [*asked_first, *group]),
        speakers=tuple(dict.fromkeys(m.speaker for m in group)),
        ts_ms=group[0].ts_ms,
        context=context,
        framing=tuple(m.position for m in asked_first)
        + tuple(m.position for m in group if group[0].person and not m.person),
    )
