"""Continuous capture: follow folders of transcripts (Claude Code's project folders, chat logs) and
capture new messages as they are written.

Each file has a watermark (``capture_files``) that survives restarts:
- a file of lines (a Claude Code session, JSONL messages) is read from where the last read stopped,
  complete lines only: a half-written last line waits for the next round;
- a JSON file (OpenAI chat, a ChatGPT export) is read whole when it changed, once it parses;
- a file that was rewritten (its first bytes differ) or truncated is read again from its start, as a
  new version of the conversation (messages it still holds are not stored twice: same ids, same text);
- a file that cannot be read is reported once (``errors``, the log) and skipped until it changes;
- a file over ``max_file_bytes`` is reported and skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from memory.capture.capture import capture, default_session
from memory.capture.formats import Conversation, ConversationFormat, detect, read_conversations
from memory.capture.llm_extract import LlmExtractor
from memory.errors import CaptureFormatError
from memory.storage.store import MemoryStore

LINE_FORMATS = (ConversationFormat.CLAUDE_CODE, ConversationFormat.JSONL)
SUFFIXES = (".jsonl", ".json")
HEAD_BYTES = 4_096
#: A JSON file younger than this that does not parse is taken as still being written.
SETTLING_NS = 5_000_000_000


@dataclass(frozen=True, slots=True)
class WatchSettings:
    folders: tuple[Path, ...]
    max_file_bytes: int = 50_000_000
    max_files: int = 10_000  # per round: a folder holding more is read in name order up to this
    extractor: LlmExtractor | None = None  # [capture] extractor = "llm"


@dataclass(frozen=True, slots=True)
class FileMark:
    """How far one file has been captured."""

    path: str
    size: int = -1
    mtime_ns: int = -1
    offset: int = 0  # bytes consumed (complete lines, for a file of lines)
    messages: int = 0  # messages read before ``offset``: the next one's position
    head: str = ""  # a hash of the first bytes: another head is a rewritten file
    fmt: str = ""
    session: str = ""
    error: str | None = None


@dataclass(slots=True)
class WatchRound:
    files_seen: int = 0
    files_read: int = 0
    new_messages: int = 0
    stored: int = 0
    new_errors: list[tuple[str, str]] = field(default_factory=list)  # (path, why): reported once each
    forgotten: int = 0  # watermarks of files deleted since: dropped (what they gave stays in memory)


def transcript_files(settings: WatchSettings) -> Iterator[Path]:
    """The files under the watched folders, in name order, at most ``max_files``."""
    count = 0
    for folder in settings.folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix in SUFFIXES and path.is_file():
                yield path
                count += 1
                if count >= settings.max_files:
                    return


async def watch_round(store: MemoryStore, settings: WatchSettings, *, actor: str = "capture") -> WatchRound:
    """Capture what changed in the watched folders since the last round."""
    marks = await load_marks(store)
    result = WatchRound()
    for path in transcript_files(settings):
        result.files_seen += 1
        key = str(path)
        mark = marks.get(key, FileMark(key))
        try:
            stat = path.stat()
        except OSError:
            continue
        if (stat.st_size, stat.st_mtime_ns) == (mark.size, mark.mtime_ns):
            continue
        result.files_read += 1
        new = await _read(store, path, mark, stat.st_size, stat.st_mtime_ns, settings, actor, result)
        if new.error and new.error != mark.error:
            result.new_errors.append((key, new.error))
        if new != mark:
            await save_mark(store, new)
    # A file deleted since keeps no watermark: `status` counted it for ever. Should the same file come
    # back it is read again, and what was captured from it before is not stored twice.
    gone = await asyncio.to_thread(_missing, list(marks))
    if gone:
        async with store.transaction() as db:
            await db.executemany("DELETE FROM capture_files WHERE path = ?", [(key,) for key in gone])
        result.forgotten = len(gone)
    return result


async def _read(
    store: MemoryStore,
    path: Path,
    mark: FileMark,
    size: int,
    mtime_ns: int,
    settings: WatchSettings,
    actor: str,
    result: WatchRound,
) -> FileMark:
    if size > settings.max_file_bytes:
        return replace(mark, size=size, mtime_ns=mtime_ns, error=f"over {settings.max_file_bytes:,} bytes; skipped")
    data = await _read_bytes(path)
    if not mark.head or len(data) < mark.offset or _head(data, _head_length(mark.head)) != mark.head:
        # A new file, or a rewritten or truncated one: read from the start, as a conversation of its own.
        head = _head(data, min(len(data), HEAD_BYTES))
        mark = FileMark(mark.path, head=head, session=f"{mark.session}~{head[-8:]}" if mark.session else "")
    text = data.decode("utf-8", errors="replace")
    try:
        fmt = ConversationFormat(mark.fmt) if mark.fmt else detect(text)
    except CaptureFormatError as exc:
        return replace(mark, size=size, mtime_ns=mtime_ns, error=str(exc))
    if path.suffix == ".json" and fmt in LINE_FORMATS:
        fmt = ConversationFormat.OPENAI  # a .json file is one document: it is read whole, once it parses
    if fmt in LINE_FORMATS:
        return await _read_lines(store, data, mark, fmt, size, mtime_ns, actor, result, settings.extractor)
    try:
        conversations = read_conversations(text, fmt, session=mark.session)
    except CaptureFormatError as exc:
        if mtime_ns > time.time_ns() - SETTLING_NS:
            return mark  # still being written: try again when it changes or settles
        return replace(mark, size=size, mtime_ns=mtime_ns, fmt=fmt.value, error=str(exc))
    await _capture(store, conversations, actor, result, settings.extractor)
    return replace(mark, size=size, mtime_ns=mtime_ns, fmt=fmt.value, offset=size, error=None)


async def _read_lines(
    store: MemoryStore,
    data: bytes,
    mark: FileMark,
    fmt: ConversationFormat,
    size: int,
    mtime_ns: int,
    actor: str,
    result: WatchRound,
    extractor: LlmExtractor | None,
) -> FileMark:
    end = data.rfind(b"\n") + 1  # complete lines only: a half-written last line waits
    if end <= mark.offset:
        return replace(mark, size=size, mtime_ns=mtime_ns, fmt=fmt.value)
    chunk = data[mark.offset : end].decode("utf-8", errors="replace")
    try:
        (conversation,) = read_conversations(chunk, fmt, session=mark.session)
    except CaptureFormatError as exc:
        return replace(mark, size=size, mtime_ns=mtime_ns, fmt=fmt.value, error=str(exc))
    messages = tuple(replace(m, position=m.position + mark.messages) for m in conversation.messages)
    session = mark.session or conversation.session or default_session(conversation)
    conversation = replace(conversation, session=session, messages=messages)
    await _capture(store, [conversation], actor, result, extractor)
    return replace(
        mark,
        size=size,
        mtime_ns=mtime_ns,
        fmt=fmt.value,
        offset=end,
        messages=mark.messages + len(messages),
        session=session,
        error=None,
    )


async def _capture(
    store: MemoryStore,
    conversations: Sequence[Conversation],
    actor: str,
    result: WatchRound,
    extractor: LlmExtractor | None,
) -> None:
    for conversation in conversations:
        if not conversation.session:
            conversation = replace(conversation, session=default_session(conversation))
        # The daemon's embedder drains the backlog: the watcher only stores.
        report = await capture(store, conversation, actor=actor, embed=False, extractor=extractor)
        result.new_messages += report.new_messages
        result.stored += report.stored


def _head(data: bytes, length: int) -> str:
    """The first ``length`` bytes, as "length:hash" (a file that grew keeps the head it had)."""
    return f"{length}:{hashlib.sha256(data[:length]).hexdigest()[:16]}"


def _head_length(head: str) -> int:
    return int(head.split(":", 1)[0])


async def _read_bytes(path: Path) -> bytes:
    return await asyncio.to_thread(path.read_bytes)


# --- the watermarks ----------------------------------------------------------------------------

_COLUMNS = "path, size, mtime_ns, byte_offset, messages, head, fmt, session, error"


def _missing(paths: list[str]) -> list[str]:
    return [path for path in paths if not Path(path).exists()]


async def load_marks(store: MemoryStore) -> dict[str, FileMark]:
    async with store.reader().execute(f"SELECT {_COLUMNS} FROM capture_files") as cursor:
        rows = await cursor.fetchall()
    return {
        str(r[0]): FileMark(
            str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), str(r[5]), str(r[6]), str(r[7]), r[8]
        )
        for r in rows
    }


async def save_mark(store: MemoryStore, mark: FileMark) -> None:
    async with store.transaction() as db:
        await db.execute(
            f"INSERT INTO capture_files ({_COLUMNS}, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "byte_offset = excluded.byte_offset, messages = excluded.messages, head = excluded.head, "
            "fmt = excluded.fmt, session = excluded.session, error = excluded.error, updated_ms = excluded.updated_ms",
            (
                mark.path, mark.size, mark.mtime_ns, mark.offset, mark.messages, mark.head, mark.fmt, mark.session,
                mark.error, store.now_ms(),
            ),
        )  # fmt: skip


async def watch_summary(store: MemoryStore) -> dict[str, object]:
    """What ``status`` shows of continuous capture: files followed, messages read, files in error."""
    marks = await load_marks(store)
    return {
        "files": len(marks),
        "messages": sum(m.messages for m in marks.values()),
        "errors": {m.path: m.error for m in marks.values() if m.error},
    }


def expand(folders: Sequence[str]) -> tuple[Path, ...]:
    """Config folders with ``~`` and environment variables expanded."""
    return tuple(Path(os.path.expandvars(os.path.expanduser(f))) for f in folders)
