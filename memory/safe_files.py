"""Reading files from folders a person named (watched transcripts, imported notes and exports)
without leaving them, hanging, or reading more than asked.

- A walk lists regular files only and never follows a symlink, to a file or a folder: a link in a
  watched or imported folder to ``~/.aws/credentials`` or ``/proc/self/environ`` would otherwise
  become crystals the agent's searches return. Symlinks are skipped, not resolved, so no check of
  where a link points can be raced by changing it. A regular file with more than one name (a hard
  link, ``st_nlink > 1``) is skipped too: its other name may be outside the folder, and no check
  can tell where. Each skipped path is named in the log (``files.link_skipped``).
- A read opens without following a final symlink and without blocking, then refuses anything but
  a regular file: a FIFO swapped in after the walk cannot hang the reader, a device cannot stream.
  A file found in a folder is read only if it is still the file the walk found (its device and
  inode) and still has one name: a hard link swapped in after the walk, or a folder on its path
  swapped for a symlink, is refused at the open, as at the walk.
- A read takes at most the bytes asked for, from an offset: a size cap holds even when the file grows
  between its ``stat`` and its read, or reports a size of 0 as ``/proc`` files do.
"""

from __future__ import annotations

import errno
import hashlib
import io
import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from memory.errors import FileRefused

_log = logging.getLogger("memory.safe_files")
_BLOCK = 1 << 20
LINK_REFUSED = "a symlink; only files inside the folder are read"
HARD_LINK_REFUSED = "a hard link (more than one name: the other may be outside the folder); not read"
REPLACED = "another file than the one listed (swapped since, or a folder on its path made a link); not read"
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def regular_files(root: Path) -> list[Path]:
    """The regular files under the folder ``root``, in name order, found without following any
    symlink below ``root`` (``root`` itself may be one: the person named it). A symlink or a hard
    link below it is skipped and named in the log."""
    return [path for path, _ in listed_files(root)]


def listed_files(root: Path) -> list[tuple[Path, FileIdentity]]:
    """``regular_files`` with each one's identity as the walk found it: pass it to ``open_regular``
    so that the read refuses another file put in its place since."""
    found, skipped = _walk(root)
    for path, why in skipped:
        _log.warning("files.link_skipped", extra={"fields": {"file": str(path), "why": why}})
    return found


def walk_files(root: Path) -> tuple[list[Path], list[tuple[Path, str]]]:
    """``regular_files`` without the log: the files to read, and the links skipped with why (a
    caller that walks every few seconds reports each once)."""
    found, skipped = _walk(root)
    return [path for path, _ in found], skipped


def _walk(root: Path) -> tuple[list[tuple[Path, FileIdentity]], list[tuple[Path, str]]]:
    found: list[tuple[Path, FileIdentity]] = []
    skipped: list[tuple[Path, str]] = []
    for folder, dirs, names in os.walk(root, followlinks=False):  # a linked folder is listed, never entered
        for name in names + [d for d in dirs if Path(folder, d).is_symlink()]:
            path = Path(folder, name)
            try:
                info = path.lstat()
            except OSError:
                continue  # gone since it was listed
            if stat.S_ISLNK(info.st_mode):
                skipped.append((path, LINK_REFUSED))
            elif stat.S_ISREG(info.st_mode):
                if info.st_nlink > 1:
                    skipped.append((path, HARD_LINK_REFUSED))
                else:
                    found.append((path, (info.st_dev, info.st_ino)))
    return sorted(found), sorted(skipped)


#: A file as it was found in a folder (device, inode): read again later, it must be the same file.
FileIdentity = tuple[int, int]


@contextmanager
def open_regular(
    path: Path, *, one_name: bool = False, identity: FileIdentity | None = None
) -> Iterator[io.BufferedReader]:
    """``path`` open for reading, binary; ``FileRefused`` when it is a symlink or not a regular file,
    or, with ``one_name`` (a file found in a folder, not named by the person), a hard link, or, with
    ``identity`` (as ``listed_files`` found it), another file than was listed: swapped since
    for a hard link, or a folder on its path for a symlink (``O_NOFOLLOW`` guards the last name only)."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(path, LINK_REFUSED) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(path, "not a regular file (a FIFO, a device or a socket); not read")
        if (one_name or identity is not None) and info.st_nlink > 1:  # linked since the walk
            raise FileRefused(path, HARD_LINK_REFUSED)
        if identity is not None and (info.st_dev, info.st_ino) != identity:
            raise FileRefused(path, REPLACED)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with open(fd, "rb") as handle:  # owns the descriptor from here
        yield handle


def read_bounded(
    path: Path, limit: int, offset: int = 0, *, one_name: bool = False, identity: FileIdentity | None = None
) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``, from ``offset`` (``open_regular`` says
    what is refused). Read in blocks: ``read(limit)`` allocates ``limit`` bytes first, 256 MB for a
    50-byte JSON export."""
    blocks = []
    with open_regular(path, one_name=one_name, identity=identity) as handle:
        handle.seek(offset)
        while limit > 0 and (block := handle.read(min(limit, _BLOCK))):
            blocks.append(block)
            limit -= len(block)
    return b"".join(blocks)


def read_capped(path: Path, cap: int, what: str, *, identity: FileIdentity | None = None) -> bytes:
    """The whole regular file ``path``, which must hold at most ``cap`` bytes: ``FileRefused``
    naming ``what`` and the cap otherwise (read stops one byte past the cap)."""
    data = read_bounded(path, cap + 1, identity=identity)
    if len(data) > cap:
        raise FileRefused(path, f"over {cap:,} bytes, the most {what} may hold; not read")
    return data


def file_sha256(path: Path, *, identity: FileIdentity | None = None) -> str:
    """The SHA-256 of the regular file ``path``, read in blocks."""
    digest = hashlib.sha256()
    with open_regular(path, identity=identity) as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


#: The longest line of a JSONL input read by default (``[capture] max_line_mb`` sets it): a longer
#: line is read past in blocks, never held whole, and skipped as a damaged one.
MAX_LINE_BYTES = 8_000_000


def bounded_lines(
    handle: io.BufferedReader | BinaryIO, max_line: int = MAX_LINE_BYTES, *, tail: bool = False
) -> Iterator[tuple[int, bytes | None]]:
    """Each line of ``handle`` from where it stands, as (its length in bytes, the line with its
    newline), or (length, None) for a line over ``max_line`` bytes: that one is read past in blocks,
    so memory holds at most ``max_line`` bytes of it. A last line without its newline is given only
    with ``tail`` (a finished file); else its writer may be at it, and it waits."""
    while line := handle.readline(max_line + 1):
        if line.endswith(b"\n") or (tail and len(line) <= max_line):
            yield len(line), line
            continue
        if len(line) <= max_line:
            return  # the end of the file, mid-line
        length = len(line)
        while (more := handle.readline(_BLOCK)) and not more.endswith(b"\n"):
            length += len(more)
        if not more and not tail:
            return  # over the cap and still unfinished: met again, whole, once its newline is written
        yield length + len(more), None
