"""Continuous capture: follow folders of transcripts (Claude Code's project folders, chat logs) and
capture new messages as they are written.

Each file has a watermark (``capture_files``) that survives restarts:
- a file of lines (a Claude Code session, JSONL messages) is read from where the last read stopped,
  complete lines only: a half-written last line waits for the next round;
- a JSON file (OpenAI chat, a ChatGPT export) is read whole when it changed, once it parses;
- a file that was rewritten (its first bytes, or the bytes just before its watermark, differ) or
  truncated is read again from its start, as a new version of the conversation; a message it still
  holds is not stored twice (one with an id captured from an earlier version is skipped; one without,
  said again word for word, is merged into its crystal);
- a file that cannot be read (not even opened: permission denied) is reported once (``errors``, the
  log) and skipped until it changes; the other files are still read;
- a line that is not JSON (a damaged line, not the last one being written) is skipped and logged with
  its file and line number (``capture.line_skipped``); the lines after it are captured;
- at most ``max_file_bytes`` are read in a round: a file of lines from its watermark (a longer file is
  read on in the next rounds), a JSON file whole (a longer one is reported and skipped);
- a line over ``max_line_bytes`` is read past in blocks, never held whole, and skipped and named
  like a damaged line;
- only regular files inside the folders are read (``memory.safe_files``): a symlink, to a file or a
  folder, or a hard link (a file with a second name, maybe outside the folder) is skipped
  (``skipped_links``), and a FIFO or device is never opened for a blocking read.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ground import failpoints
from memory.capture.capture import capture, default_session
from memory.capture.formats import Conversation, ConversationFormat, detect, read_conversations
from memory.capture.llm_extract import LlmExtractor
from memory.capture.watch_settings import WatchSettings
from memory.errors import CaptureFormatError, FileRefused
from memory.intake.store import IntakeStore
from memory.safe_files import MAX_LINE_BYTES, bounded_lines, open_regular, read_bounded, walk_files
from memory.storage.store import MemoryStore

_log = logging.getLogger("memory.capture.watch")

LINE_FORMATS = (ConversationFormat.CLAUDE_CODE, ConversationFormat.JSONL)
SUFFIXES = (".jsonl", ".json")
HEAD_BYTES = 4_096
#: The bytes before a file's watermark that must be unchanged for it to be read on from there.
TAIL_BYTES = 256
#: A JSON file younger than this that does not parse is taken as still being written.
SETTLING_NS = 5_000_000_000


@dataclass(frozen=True, slots=True)
class WatchPlan:
    """What a round reads, in bytes: ``WatchPlan.of`` the settings (a test sets byte caps directly)."""

    folders: tuple[Path, ...]
    max_file_bytes: int = 50_000_000
    max_line_bytes: int = MAX_LINE_BYTES  # a longer line is skipped as damaged, never held whole
    max_files: int = 10_000  # per round: a folder holding more is read in name order up to this
    extractor: LlmExtractor | None = None  # [capture] extractor = "llm"

    @classmethod
    def of(cls, settings: WatchSettings, extractor: LlmExtractor | None = None) -> WatchPlan:
        """The plan of ``settings``' folders (``~`` and variables expanded) and caps."""
        return cls(expand(settings.watch), settings.max_file_mb * 1_000_000, settings.max_line_bytes,
                   extractor=extractor)  # fmt: skip


@dataclass(frozen=True, slots=True)
class FileMark:
    """How far one file has been captured."""

    path: str
    size: int = -1
    mtime_ns: int = -1
    offset: int = 0  # bytes consumed (complete lines, for a file of lines)
    messages: int = 0  # messages read before ``offset``: the next one's position
    head: str = ""  # a hash of the first bytes: another head is a rewritten file
    tail: str = ""  # a hash of the bytes before ``offset``: other bytes there, a rewritten file
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
    skipped_lines: list[tuple[str, int]] = field(default_factory=list)  # (path, line from 1): damaged, skipped
    forgotten: int = 0  # watermarks of files deleted since: dropped (what they gave stays in memory)
    skipped_links: list[tuple[str, str]] = field(default_factory=list)  # (path, why): symlinks, hard links


def transcript_files(settings: WatchPlan, skipped: list[tuple[str, str]] | None = None) -> Iterator[Path]:
    """The regular files under the watched folders, in name order, at most ``max_files``; no
    symlink is followed and no hard link read (``memory.safe_files``): those go to ``skipped``."""
    count = 0
    for folder in settings.folders:
        if not folder.is_dir():
            continue
        found, links = walk_files(folder)
        if skipped is not None:
            skipped.extend((str(path), why) for path, why in links)
        for path in found:
            if path.suffix in SUFFIXES:
                yield path
                count += 1
                if count >= settings.max_files:
                    return


async def watch_round(store: IntakeStore, settings: WatchPlan, *, actor: str = "capture") -> WatchRound:
    """Capture what changed in the watched folders since the last round."""
    marks = await load_marks(store)
    result = WatchRound()
    for path in transcript_files(settings, result.skipped_links):
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
            # Failing here, between a file's captures and its watermark, must not store them twice:
            # the next round reads the same lines again and finds their messages captured.
            failpoints.check("capture:before-mark")
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
    store: IntakeStore,
    path: Path,
    mark: FileMark,
    size: int,
    mtime_ns: int,
    settings: WatchPlan,
    actor: str,
    result: WatchRound,
) -> FileMark:
    cap = settings.max_file_bytes
    try:
        first = await asyncio.to_thread(read_bounded, path, HEAD_BYTES, one_name=True)
        if (
            not mark.head
            or size < mark.offset
            or _head(first, _head_length(mark.head)) != mark.head
            or (mark.tail and await asyncio.to_thread(_tail_of, path, mark) != mark.tail)
        ):
            # A new file, or a rewritten or truncated one: read from the start, as a conversation of its own.
            head = _head(first, len(first))
            mark = FileMark(mark.path, head=head, session=f"{mark.session}~{head[-8:]}" if mark.session else "")
        if path.suffix == ".jsonl" or (mark.fmt and ConversationFormat(mark.fmt) in LINE_FORMATS):
            lines = await asyncio.to_thread(_line_chunk, path, mark.offset, cap, settings.max_line_bytes)
            if not mark.fmt and lines.consumed:
                try:
                    found = detect(lines.data.decode("utf-8", errors="replace"))
                except CaptureFormatError as exc:
                    return replace(mark, size=size, mtime_ns=mtime_ns, error=str(exc))
                mark = replace(mark, fmt=found.value) if found in LINE_FORMATS else mark
            if mark.fmt or not lines.consumed:  # from the watermark, about the cap, complete lines only
                return await _read_lines(store, path, lines, mark, size, mtime_ns, actor, result, settings)
        data = await asyncio.to_thread(read_bounded, path, cap + 1, one_name=True)  # a whole document's size
    except FileRefused as exc:  # swapped for a symlink or a FIFO since the walk
        return replace(mark, size=size, mtime_ns=mtime_ns, error=exc.reason)
    except OSError as exc:  # one file the daemon may not read must not stop the round for the others
        return replace(mark, size=size, mtime_ns=mtime_ns, error=f"cannot be read: {exc.strerror or exc}")
    over = f"over {cap:,} bytes; skipped"
    if len(data) > cap and path.suffix == ".json":
        return replace(mark, size=size, mtime_ns=mtime_ns, error=over)  # a document is read whole or not at all
    text = data[:cap].decode("utf-8", errors="replace")
    try:
        fmt = ConversationFormat(mark.fmt) if mark.fmt else detect(text)
    except CaptureFormatError as exc:
        return replace(mark, size=size, mtime_ns=mtime_ns, error=over if len(data) > cap else str(exc))
    if path.suffix == ".json" and fmt in LINE_FORMATS:
        fmt = ConversationFormat.OPENAI  # a .json file is one document: it is read whole, once it parses
    if len(data) > cap:
        return replace(mark, size=size, mtime_ns=mtime_ns, error=over)
    try:
        conversations = read_conversations(text, fmt, session=mark.session)
    except CaptureFormatError as exc:
        if mtime_ns > time.time_ns() - SETTLING_NS:
            return mark  # still being written: try again when it changes or settles
        return replace(mark, size=size, mtime_ns=mtime_ns, fmt=fmt.value, error=str(exc))
    await _capture(store, conversations, actor, result, settings.extractor)
    return replace(mark, size=size, mtime_ns=mtime_ns, fmt=fmt.value, offset=size, error=None)


async def _read_lines(
    store: IntakeStore,
    path: Path,
    lines: _Lines,
    mark: FileMark,
    size: int,
    mtime_ns: int,
    actor: str,
    result: WatchRound,
    settings: WatchPlan,
) -> FileMark:
    """Capture ``lines``, the complete lines of ``path`` from ``mark.offset`` on."""
    if not lines.consumed:  # no complete line yet: a half-written last line waits
        return replace(mark, size=size, mtime_ns=mtime_ns)
    fmt = ConversationFormat(mark.fmt)
    try:
        (conversation,) = read_conversations(lines.data.decode("utf-8", errors="replace"), fmt, session=mark.session)
    except CaptureFormatError as exc:
        return replace(mark, size=size, mtime_ns=mtime_ns, error=str(exc))
    if damaged := sorted(conversation.damaged + lines.oversized):
        try:
            first = await asyncio.to_thread(_lines_before, path, mark.offset)
        except (OSError, FileRefused):  # changed under us: the lines are numbered from the watermark
            first = 0
        for number in damaged:
            result.skipped_lines.append((str(path), first + number))
            _log.warning("capture.line_skipped", extra={"fields": {"file": str(path), "line": first + number}})
    messages = tuple(replace(m, position=m.position + mark.messages) for m in conversation.messages)
    session = mark.session or conversation.session or default_session(conversation)
    conversation = replace(conversation, session=session, messages=messages)
    await _capture(store, [conversation], actor, result, settings.extractor)
    offset = mark.offset + lines.consumed
    # the file's own bytes before the new watermark (the chunk read holds an over-long line as "\n")
    tail = await asyncio.to_thread(_bytes_before, path, offset)
    return replace(
        mark,
        tail=_head(tail, len(tail)),
        size=size if offset >= size else -1,  # more past the cap: read on next round, changed or not
        mtime_ns=mtime_ns,
        offset=offset,
        messages=mark.messages + len(messages),
        session=session,
        error=None,
    )


@dataclass(frozen=True, slots=True)
class _Lines:
    data: bytes  # complete lines; one over the line cap stands as an empty line (numbering kept)
    consumed: int  # the bytes of the file they stand for
    oversized: tuple[int, ...]  # the numbers (from 1, among these) of lines over the cap: skipped


def _line_chunk(path: Path, offset: int, cap: int, max_line: int) -> _Lines:
    """The complete lines of ``path`` from ``offset``, at most ``cap`` bytes of them; a line over
    ``max_line`` bytes is read past, never held (``memory.safe_files.bounded_lines``)."""
    parts: list[bytes] = []
    oversized: list[int] = []
    consumed = 0
    with open_regular(path, one_name=True) as handle:
        handle.seek(offset)
        for number, (length, line) in enumerate(bounded_lines(handle, max_line), start=1):
            if consumed and consumed + length > cap:
                break  # the next round's (a first line longer than the cap is still read: up to max_line)
            parts.append(b"\n" if line is None else line)
            if line is None:
                oversized.append(number)
            consumed += length
    return _Lines(b"".join(parts), consumed, tuple(oversized))


def _bytes_before(path: Path, offset: int) -> bytes:
    """The last ``TAIL_BYTES`` (or fewer) bytes of ``path`` before ``offset``."""
    length = min(TAIL_BYTES, offset)
    return read_bounded(path, length, offset - length, one_name=True)


def _tail_of(path: Path, mark: FileMark) -> str:
    """The hash of the bytes before ``mark.offset`` as ``mark.tail`` measured them. A file rewritten
    between two rounds with its first bytes kept and grown past its watermark (a line dropped, new
    turns added) has other bytes there: read on from the old offset, it would lose turns."""
    length = _head_length(mark.tail)
    return _head(read_bounded(path, length, mark.offset - length, one_name=True), length)


def _lines_before(path: Path, offset: int) -> int:
    """How many lines the first ``offset`` bytes of ``path`` hold (read in blocks, never whole)."""
    count = 0
    with open_regular(path) as handle:
        while offset > 0 and (block := handle.read(min(offset, 1 << 20))):
            count += block.count(b"\n")
            offset -= len(block)
    return count


async def _capture(
    store: IntakeStore,
    conversations: Sequence[Conversation],
    actor: str,
    result: WatchRound,
    extractor: LlmExtractor | None,
) -> None:
    for conversation in conversations:
        if not conversation.session:
            conversation = replace(conversation, session=default_session(conversation))
        # The daemon's embedder drains the backlog: the watcher only stores.
        family = conversation.session.split("~")[0]  # a rewritten file's versions: <id>~<head>
        report = await capture(store, conversation, actor=actor, embed=False, extractor=extractor, family=family)
        result.new_messages += report.new_messages
        result.stored += report.stored


def _head(data: bytes, length: int) -> str:
    """The first ``length`` bytes, as "length:hash" (a file that grew keeps the head it had)."""
    return f"{length}:{hashlib.sha256(data[:length]).hexdigest()[:16]}"


def _head_length(head: str) -> int:
    return int(head.split(":", 1)[0])


# --- the watermarks ----------------------------------------------------------------------------

_COLUMNS = "path, size, mtime_ns, byte_offset, messages, head, fmt, session, error"


def _missing(paths: list[str]) -> list[str]:
    return [path for path in paths if not Path(path).exists()]


async def load_marks(store: MemoryStore) -> dict[str, FileMark]:
    async with store.reader().execute(f"SELECT {_COLUMNS} FROM capture_files") as cursor:
        rows = await cursor.fetchall()
    return {
        str(r[0]): FileMark(
            str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), *_split(str(r[5])), str(r[6]), str(r[7]), r[8]
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
                mark.path, mark.size, mark.mtime_ns, mark.offset, mark.messages,
                f"{mark.head}|{mark.tail}" if mark.tail else mark.head, mark.fmt, mark.session,
                mark.error, store.now_ms(),
            ),
        )  # fmt: skip


def _split(column: str) -> tuple[str, str]:
    """The ``head`` column holds the head and, after ``|``, the tail (a watermark from before the
    tail was kept has none: it is read on from its offset as it was)."""
    head, _, tail = column.partition("|")
    return head, tail


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
