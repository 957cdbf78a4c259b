"""Turning files into crystals: markdown/text folders (chunked by section) and JSONL message logs.

Pure functions: they read files and yield ``NewCrystal`` values; the store
writes them. Re-importing is incremental: the same chunk text is deduplicated
by content hash, and whole files already imported unchanged are skipped.

Only regular files are read, and no symlink below the folder is followed (``memory.safe_files``): a
link to a credentials file is skipped, a FIFO never waited on, and a file is read only if it is still
the one the walk found (not a link swapped in since). A text file is read whole to be
chunked, so it is refused past ``MAX_TEXT_FILE_BYTES``; a message's time in the future or before 1970
is clamped and tagged (``memory.given_time``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ground import json_text
from ground.authority import Speaker
from memory.errors import FileRefused
from memory.given_time import with_given_time
from memory.model import MAX_CONTEXT_CHARS, NewCrystal, Origin, SemanticType
from memory.safe_files import (
    MAX_LINE_BYTES,
    FileIdentity,
    bounded_lines,
    file_sha256,
    listed_files,
    open_regular,
    read_capped,
)

_log = logging.getLogger("memory.importer")
TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst"})
MAX_CHUNK_CHARS = 1_500
#: A markdown or text file is read whole to be chunked: past this it is refused (``FileRefused``).
MAX_TEXT_FILE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: Path
    content_hash: str
    #: As found in a folder (None: a file the person named): each read refuses another file since.
    identity: FileIdentity | None = None


def find_sources(root: Path) -> list[SourceFile]:
    """Every importable file under ``root`` (or ``root`` itself), in a stable order: regular files
    only, found without following a symlink below ``root``. ``root`` itself may be a link: the person
    named it (a file so named is read where it points)."""
    if root.is_file():
        named = root.resolve() if root.is_symlink() else root
        return [SourceFile(named, file_sha256(named))] if _importable(named) else []
    found = []
    for path, identity in listed_files(root) if root.is_dir() else []:
        if _importable(path):
            try:
                found.append(SourceFile(path, file_sha256(path, identity=identity), identity))
            except FileRefused as exc:  # swapped since the walk
                _log.warning("files.link_skipped", extra={"fields": {"file": str(path), "why": exc.reason}})
            except FileNotFoundError:
                continue  # gone since the walk
    return found


def _importable(path: Path) -> bool:
    return path.suffix.lower() in TEXT_SUFFIXES | {".jsonl"}


def crystals_from_file(
    source: SourceFile, now_ms: int | None = None, *, max_line: int = MAX_LINE_BYTES
) -> Iterator[NewCrystal]:
    """The crystals of one file; its times held between 1970 and ``now_ms`` (default: the clock). A
    JSONL line over ``max_line`` bytes is read past, never held, and skipped and logged
    (``import.line_skipped``)."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    jsonl = source.path.suffix.lower() == ".jsonl"
    items = _from_jsonl(source, max_line) if jsonl else _from_text(source)
    for item in items:
        yield with_given_time(item, now)


def _from_text(source: SourceFile) -> Iterator[NewCrystal]:
    """Chunks split at headings and blank lines, at most MAX_CHUNK_CHARS, with their line ranges."""
    path = source.path
    data = read_capped(path, MAX_TEXT_FILE_BYTES, "a text file to import", identity=source.identity)
    text = data.decode("utf-8", errors="replace")
    for start, chunk in text_chunks(text.splitlines()):
        text = "\n".join(chunk).strip()
        if text:
            yield NewCrystal(
                text[: MAX_CHUNK_CHARS * 2],
                origin=Origin.INDEXED,
                speaker=Speaker.FILE,
                source_path=str(path),
                source="import",
                line_start=start,
                line_end=start + len(chunk) - 1,
            )


def text_chunks(lines: list[str]) -> Iterator[tuple[int, list[str]]]:
    """``lines`` split at headings, and at blank lines once a chunk has a third of MAX_CHUNK_CHARS,
    never over MAX_CHUNK_CHARS: each chunk with its first line's number (from 1). Inside a fenced
    code block only the size splits: a '#' line there is code (a shell comment), not a heading."""
    chunk: list[str] = []
    start = 1
    in_fence = False
    for number, line in enumerate(lines, start=1):
        heading = line.startswith("#") and not in_fence
        boundary = heading or (not in_fence and not line.strip() and sum(map(len, chunk)) > MAX_CHUNK_CHARS // 3)
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if chunk and (boundary or sum(map(len, chunk)) + len(line) > MAX_CHUNK_CHARS):
            yield start, chunk
            chunk, start = [], number
        if not chunk:
            start = number
        chunk.append(line)
    if chunk:
        yield start, chunk


def _from_jsonl(source: SourceFile, max_line: int) -> Iterator[NewCrystal]:
    """One crystal per message: ``{"text"|"content": str, "speaker"|"role": str?, "timestamp": ISO|ms?}``.

    Each message carries its neighbours (the messages before and after it) as context, so a short
    reply stays findable. Lines that are not such an object are skipped, as is one over ``max_line``.
    """
    path, messages = source.path, list[tuple[int, str, int | None]]()
    with open_regular(path, identity=source.identity) as handle:
        for number, (length, raw) in enumerate(bounded_lines(handle, max_line, tail=True), start=1):
            if raw is None:
                fields = {"file": str(path), "line": number, "bytes": length, "max_line": max_line}
                _log.warning("import.line_skipped", extra={"fields": fields})
                continue
            message = parse_message(raw.decode("utf-8", errors="replace"))
            if message is not None:
                text, speaker, ts = message
                messages.append((number, f"{speaker}: {text}" if speaker else text, ts))
    for i, (number, text, ts) in enumerate(messages):
        yield NewCrystal(
            text,
            context=neighbour_context(
                messages[i - 1][1] if i > 0 else None, messages[i + 1][1] if i + 1 < len(messages) else None
            ),
            semantic_type=SemanticType.EPISODE,
            origin=Origin.SESSION,
            speaker=Speaker.FILE,  # a log from elsewhere: whoever its lines name, a file vouches for them
            created_at_ms=ts,
            source_path=str(path),
            source="import",
            line_start=number,
            line_end=number,
        )


def neighbour_context(before: str | None, after: str | None) -> str | None:
    """The context of a message in a conversation: the message before it and the one after it."""
    parts = [p for p in (before, after) if p]
    if not parts:
        return None
    half = MAX_CONTEXT_CHARS // 2 - 1
    return "\n".join(p[:half] for p in parts)


def parse_message(line: str) -> tuple[str, str | None, int | None] | None:
    """(text, speaker, timestamp ms) of one JSONL line, or None if it is not a usable message."""
    if not line.strip():
        return None
    try:
        doc = json_text.loads(line)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    text = doc.get("text", doc.get("content"))
    if not isinstance(text, str) or not text.strip():
        return None
    speaker = doc.get("speaker", doc.get("role"))
    return text, speaker if isinstance(speaker, str) else None, _timestamp(doc.get("timestamp"))


def _timestamp(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return iso_time_ms(value) if isinstance(value, str) else None


def iso_time_ms(value: str) -> int | None:
    """An ISO 8601 time ('Z', a zone or none: UTC) as epoch ms; None when it is not one."""
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
