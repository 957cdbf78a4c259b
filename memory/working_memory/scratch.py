"""``memory/scratch.md``: the write-ahead log of working memory.

A note is one line, appended and fsynced before ``append`` returns, so a note
survives a ``kill -9`` at any later moment. The dream cycle reads the log,
synthesises it into MEMORY.md, and then removes exactly the bytes it read:
notes appended while it dreamed stay for the next cycle.

Writers (the daemon, a CLI beside it) take an exclusive ``flock`` on the file
for each append and for the final trim, so they never interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ground.clock import iso_utc
from ground.errors import Invalid
from memory.errors import MemoryError_
from memory.storage.private_files import FILE_MODE, private_dir

MAX_NOTE_CHARS = 2_000
_LINE = re.compile(
    r"^- \[(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\] \(importance (?P<imp>[01](?:\.\d+)?)\) (?P<text>.+)$"
)
HEADER = "# Scratch: notes since the last dream (the dream cycle folds them into MEMORY.md)\n"


class ScratchError(MemoryError_, Invalid):
    """A note the log cannot take (empty, too long): 400."""


@dataclass(frozen=True, slots=True)
class ScratchNote:
    text: str
    importance: float
    at: str  # ISO 8601 UTC, as written


@dataclass(frozen=True, slots=True)
class ScratchSnapshot:
    notes: tuple[ScratchNote, ...]
    consumed_bytes: int  # what a dream that read this snapshot may remove


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ScratchLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[int]:
        private_dir(self.path.parent)
        while True:
            created = not self.path.exists()
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX)
            # ``consume`` replaces the file: a writer that opened the old one before the rename
            # and waited for the lock must reopen, or its note would go to an unlinked file.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        try:
            if created:
                fsync_dir(self.path.parent)  # the file's name must survive a crash too
            yield fd
        finally:
            os.close(fd)  # closing releases the lock

    def append(self, text: str, importance: float, now_ms: int) -> ScratchNote:
        """Append one note durably (written and fsynced before returning)."""
        line_text = " ".join(text.split())
        if not line_text:
            raise ScratchError("a note needs some text")
        if len(line_text) > MAX_NOTE_CHARS:
            raise ScratchError(f"a note is at most {MAX_NOTE_CHARS} characters, got {len(line_text)}")
        if not 0.0 <= importance <= 1.0:
            raise ScratchError(f"importance must be in [0, 1], got {importance}")
        note = ScratchNote(line_text, round(importance, 2), iso_utc(now_ms))
        with self._locked() as fd:
            if os.fstat(fd).st_size == 0:
                os.write(fd, HEADER.encode())
            os.write(fd, f"- [{note.at}] (importance {note.importance:.2f}) {note.text}\n".encode())
            os.fsync(fd)
        return note

    def read(self) -> ScratchSnapshot:
        """Every complete note; a line a person wrote by hand counts as a note of importance 0.5."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return ScratchSnapshot((), 0)
        # A torn last line (no newline: the writer died mid-write) is left for later, not consumed.
        complete = data[: data.rfind(b"\n") + 1]
        notes = []
        for raw in complete.decode("utf-8", errors="replace").splitlines():
            line = raw.strip()
            if not line or line == HEADER.strip():
                continue
            match = _LINE.match(line)
            if match:
                notes.append(ScratchNote(match["text"], float(match["imp"]), match["ts"]))
            else:
                notes.append(ScratchNote(line.removeprefix("- ").strip(), 0.5, ""))
        return ScratchSnapshot(tuple(n for n in notes if n.text), len(complete))

    def consume(self, snapshot: ScratchSnapshot) -> None:
        """Remove what ``snapshot`` read, keeping anything appended since; atomic (rename)."""
        if snapshot.consumed_bytes == 0:
            return
        with self._locked():
            data = self.path.read_bytes()
            rest = data[snapshot.consumed_bytes :]
            tmp = self.path.with_name(self.path.name + ".tmp")
            with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as out:
                if rest.strip():
                    out.write(HEADER.encode() + rest)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            fsync_dir(self.path.parent)
