"""Conversations as people's tools write them, read into one shape (pure: text in, messages out).

Four formats, told apart by their shape (``detect``) or named by the caller:

- ``openai``: a JSON list of chat messages (``{"role", "content", "name"?, "id"?, "timestamp"?}``,
  ``content`` a string or a list of ``{"type": "text", "text"}`` parts), or ``{"messages": [...]}``
  with an optional ``"id"``/``"session"``;
- ``claude-code``: a Claude Code session file, one JSON object per line (``{"type": "user" |
  "assistant", "message": {"role", "content"}, "uuid", "sessionId", "timestamp"}``). Claude Code
  writes much under the user's name that the person never typed, so only the person's typing is
  read as theirs (``Message.person``); left out are tool calls and results (``toolUseResult``), meta
  and compacted-summary lines (``isMeta``, ``isCompactSummary``), a sub-agent's side of the session
  (``isSidechain``: the prompts the agent wrote to it and its answers), and the output of shell and
  slash commands (``<bash-stdout>``, ``<command-name>`` ... wrappers, ``COMMAND_WRAPPERS``);
  ``<system-reminder>`` blocks the tool inserted are cut out of any turn;
- ``chatgpt``: a ChatGPT data export's ``conversations.json``, a list of conversations whose
  messages form a tree (``mapping``); the thread that ends at ``current_node`` is the one read;
- ``jsonl``: the project's own message log, one ``{"text"|"content", "speaker"|"role"?,
  "timestamp"?, "id"?}`` per line.

A damaged input raises ``CaptureFormatError`` naming what is wrong and where; nothing is stored
from it. A line of a JSONL file or a Claude Code session that is not a message is skipped and counted
(``skipped``), as the JSONL importer does; a line that is not a JSON object at all is also named
(``damaged``: its line number), so one damaged line never holds back the lines after it. A last line
cut short is reported instead: the writer may still be at it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from ground import json_text
from memory.errors import CaptureFormatError

MAX_MESSAGES = 200_000  # one conversation; past this the input is refused, not cut silently


class ConversationFormat(StrEnum):
    OPENAI = "openai"
    CLAUDE_CODE = "claude-code"
    CHATGPT = "chatgpt"
    JSONL = "jsonl"


@dataclass(frozen=True, slots=True)
class Message:
    position: int  # 0-based, in the conversation's order
    role: str  # user, assistant, system, tool, or a speaker's name where the format has no roles
    speaker: str  # who said it: a name where the format gives one, else the role
    text: str
    message_id: str | None = None  # the format's own id, where it has one
    ts_ms: int | None = None
    # Typed by the person, as far as the format can tell (a user turn that is no tool's or command's
    # output): only these turns are the person's words in a transcript (``ground.authority``).
    person: bool = False


@dataclass(frozen=True, slots=True)
class Conversation:
    session: str  # the format's conversation or session id, else one the caller gives
    messages: tuple[Message, ...]
    title: str | None = None
    skipped: int = 0  # lines or entries that were not messages
    damaged: tuple[int, ...] = ()  # numbers (from 1) of lines that were not a JSON object: skipped


def detect(raw: str) -> ConversationFormat:
    """Which format ``raw`` is written in, from its shape."""
    text = raw.lstrip()
    if not text:
        raise CaptureFormatError("the input is empty")
    if text.startswith("["):
        doc = _json(text)
        return ConversationFormat.CHATGPT if is_chatgpt_export(doc) else ConversationFormat.OPENAI
    try:
        whole = json_text.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and "messages" in whole:
        return ConversationFormat.OPENAI
    for line in text.splitlines()[:5]:  # a session may open with a summary line
        try:
            head = json_text.loads(line)
        except ValueError:
            continue
        if isinstance(head, dict) and ("sessionId" in head or ("message" in head and "type" in head)):
            return ConversationFormat.CLAUDE_CODE
    return ConversationFormat.JSONL


def read_conversations(raw: str, fmt: ConversationFormat | None = None, *, session: str = "") -> list[Conversation]:
    """Every conversation in ``raw`` (a ChatGPT export holds many; the others one)."""
    fmt = fmt or detect(raw)
    if fmt is ConversationFormat.CHATGPT:
        return _chatgpt(_json(raw))
    if fmt is ConversationFormat.OPENAI:
        return [_openai(_json(raw), session)]
    if fmt is ConversationFormat.CLAUDE_CODE:
        return [_claude_code(raw, session)]
    return [_jsonl(raw, session)]


def read_messages(items: Iterable[Mapping[str, Any]], *, session: str) -> Conversation:
    """Messages handed over as objects (the API's and MCP's ``messages``), in OpenAI chat form."""
    return _openai(list(items), session)


# --- the formats ---------------------------------------------------------------------------------


def _json(raw: str) -> Any:
    try:
        return json_text.loads(raw)
    except ValueError as exc:
        raise CaptureFormatError(f"not valid JSON: {exc}") from None


def _openai(doc: Any, session: str) -> Conversation:
    if isinstance(doc, dict):
        session = str(doc.get("session") or doc.get("id") or session)
        doc = doc.get("messages")
    if not isinstance(doc, list):
        raise CaptureFormatError("OpenAI chat form is a list of messages, or an object with 'messages'")
    _bounded(len(doc))
    messages: list[Message] = []
    for index, item in enumerate(doc):
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            raise CaptureFormatError(f"message {index} has no 'role'")
        text = _text_of(item.get("content"))
        if text is None:
            raise CaptureFormatError(f"message {index}: 'content' is neither text nor a list of text parts")
        role = item["role"]
        name = item.get("name")
        speaker = name if isinstance(name, str) and name.strip() else role
        messages.append(
            Message(
                len(messages),
                role,
                speaker,
                text,
                _id(item.get("id")),
                _ms(item.get("timestamp", item.get("created_at"))),
                person=role == "user",
            )
        )
    return Conversation(session, _spoken(messages))


def _claude_code(raw: str, session: str) -> Conversation:
    messages: list[Message] = []
    skipped = 0
    damaged: list[int] = []
    for number, entry in _json_lines(raw):
        if not isinstance(entry, dict):  # not JSON, or not an object: a damaged line, skipped and named
            damaged.append(number)
            skipped += 1
            continue
        session = str(entry.get("sessionId") or session)
        inner = entry.get("message")
        if entry.get("type") not in ("user", "assistant") or _not_a_turn(entry) or not isinstance(inner, dict):
            skipped += 1
            continue
        text = _text_of(inner.get("content"), only_text_parts=True)
        text = _REMINDER.sub("", text).strip() if text else text
        if not text or (entry["type"] == "user" and COMMAND_WRAPPERS.search(text)):
            skipped += 1  # a tool call or result, a reminder, a command's output: no one's words
            continue
        role = str(inner.get("role") or entry["type"])
        messages.append(
            Message(
                len(messages),
                role,
                role,
                text,
                _id(entry.get("uuid")),
                _ms(entry.get("timestamp")),
                person=role == "user" and entry["type"] == "user",
            )
        )
    return Conversation(session, _spoken(messages), skipped=skipped, damaged=tuple(damaged))


#: Claude Code's wrappers around what a shell or slash command printed or was given, written as a
#: user turn: the person typed none of it (a command's output can hold any page's words).
COMMAND_WRAPPERS = re.compile(
    r"<(?:bash-input|bash-stdout|bash-stderr|local-command-stdout|local-command-stderr|command-name"
    r"|command-message|command-args|command-stdout|command-stderr|user-prompt-submit-hook)>"
)
#: What Claude Code inserts into turns for the model (file changes, reminders): the tool's words.
_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)


def _not_a_turn(entry: dict[str, Any]) -> bool:
    """A line that is no one's turn in the main conversation: a sub-agent's side of it, a meta line,
    a compacted summary, or a tool's result."""
    return any(entry.get(key) for key in ("isSidechain", "isMeta", "isCompactSummary")) or "toolUseResult" in entry


def is_chatgpt_export(doc: Any) -> bool:
    """Whether a parsed JSON document is a ChatGPT export's ``conversations.json``."""
    first = doc[0] if isinstance(doc, list) and doc else None
    return isinstance(first, dict) and "role" not in first and ("mapping" in first or "conversation_id" in first)


def chatgpt_conversations(doc: Any) -> list[Conversation]:
    """The conversations of a parsed ChatGPT export (``CaptureFormatError`` when it is not one)."""
    return _chatgpt(doc)


def _chatgpt(doc: Any) -> list[Conversation]:
    if not isinstance(doc, list):
        raise CaptureFormatError("a ChatGPT export's conversations.json is a list of conversations")
    conversations = []
    for index, item in enumerate(doc):
        mapping = item.get("mapping") if isinstance(item, dict) else None
        if not isinstance(mapping, dict):
            raise CaptureFormatError(f"conversation {index} has no 'mapping'")
        _bounded(len(mapping))
        thread = _thread(mapping, item.get("current_node"))
        messages: list[Message] = []
        skipped = 0
        for node in thread:
            message = node.get("message") if isinstance(node, dict) else None
            if not isinstance(message, dict):
                continue  # the tree's root holds no message
            author = message.get("author")
            role = author.get("role") if isinstance(author, dict) else None
            content = message.get("content")
            text_content = isinstance(content, dict) and content.get("content_type", "text") == "text"
            parts = content.get("parts") if isinstance(content, dict) and text_content else None
            text = _text_of(parts, only_text_parts=True) if isinstance(parts, list) else None
            if not isinstance(role, str) or not text or role in ("system", "tool"):
                skipped += 1
                continue
            created = message.get("create_time")
            ts = int(created * 1000) if isinstance(created, int | float) and not isinstance(created, bool) else None
            messages.append(Message(len(messages), role, role, text, _id(message.get("id")), ts, person=role == "user"))
        session = str(item.get("conversation_id") or item.get("id") or f"chatgpt-{index}")
        title = item.get("title") if isinstance(item.get("title"), str) else None
        conversations.append(Conversation(session, _spoken(messages), title, skipped))
    return conversations


def _thread(mapping: dict[str, Any], current: object) -> list[Any]:
    """The nodes from the root to ``current`` (else to the last leaf), following parents."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [key for key, node in mapping.items() if isinstance(node, dict) and not node.get("children")]
        current = leaves[-1] if leaves else None
    thread: list[Any] = []
    seen: set[str] = set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        thread.append(node)
        current = node.get("parent") if isinstance(node, dict) else None
    return thread[::-1]


def _jsonl(raw: str, session: str) -> Conversation:
    messages: list[Message] = []
    skipped = 0
    damaged: list[int] = []
    for number, doc in _json_lines(raw):
        if not isinstance(doc, dict):
            damaged.append(number)
        text = doc.get("text", doc.get("content")) if isinstance(doc, dict) else None
        if not isinstance(text, str) or not text.strip():  # not JSON, or not a message
            skipped += 1
            continue
        speaker = doc.get("speaker", doc.get("role"))
        who = speaker if isinstance(speaker, str) and speaker.strip() else "user"
        role = who if who in ("user", "assistant", "system", "tool") else "user"
        person = role == "user"
        messages.append(Message(len(messages), role, who, text, _id(doc.get("id")), _ms(doc.get("timestamp")), person))
    return Conversation(session, tuple(messages), skipped=skipped, damaged=tuple(damaged))


_NOT_JSON = object()


def _json_lines(raw: str) -> Iterator[tuple[int, Any]]:
    """(line number, its JSON value or ``_NOT_JSON``) for each non-blank line. A last line that is
    cut short (no newline after it, and not JSON) is refused: its writer may still be at it."""
    lines = raw.splitlines()
    _bounded(len(lines))
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield number, json_text.loads(line)
        except ValueError:
            if number == len(lines) and not raw.endswith("\n") and line.lstrip().startswith("{"):
                raise CaptureFormatError(f"line {number} is cut short (is the file still being written?)") from None
            yield number, _NOT_JSON


# --- helpers -------------------------------------------------------------------------------------


def _spoken(messages: list[Message]) -> tuple[Message, ...]:
    """The messages renumbered in order (positions stay 0-based and dense)."""
    return tuple(replace(m, position=i) for i, m in enumerate(messages))


def _text_of(content: object, *, only_text_parts: bool = False) -> str | None:
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return None
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif not only_text_parts and not isinstance(part, dict):
            return None
    return "\n".join(t for t in texts if t.strip()).strip()


def _id(value: object) -> str | None:
    return str(value)[:128] if isinstance(value, str | int) and not isinstance(value, bool) and str(value) else None


def _ms(value: object) -> int | None:
    # JSON's Infinity and huge numbers read as numbers too: no time (int(inf) raised OverflowError,
    # which stopped the watcher's every round, and a number past SQLite's integers stops a write).
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < _NO_LATER_THAN:
        return int(value * 1000) if value < 10**11 else int(value)  # seconds or milliseconds
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp() * 1000)
    return None


#: Past any time in milliseconds (the year 285,000): a number this large is no timestamp.
_NO_LATER_THAN = 2**53


def _bounded(count: int) -> None:
    if count > MAX_MESSAGES:
        raise CaptureFormatError(f"{count} messages in one conversation; at most {MAX_MESSAGES}")
