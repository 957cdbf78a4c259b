"""Reading files from folders a person named (watched transcripts, imported notes and exports)
without leaving them, hanging, or reading more than asked.

- A walk lists regular files only and never follows a symlink, to a file or a folder: a link in a
  watched or imported folder to ``~/.aws/credentials`` or ``/proc/self/environ`` would otherwise
  become crystals the agent's searches return. Symlinks are skipped, not resolved, so no check of
  where a link points can be raced by changing it.
- A read opens without following a final symlink and without blocking, then refuses anything but
  a regular file: a FIFO swapped in after the walk cannot hang the reader, a device cannot stream.
- A read takes at most the bytes asked for, from an offset: a size cap holds even when the file grows
  between its ``stat`` and its read, or reports a size of 0 as ``/proc`` files do.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memory.errors import FileRefused

_BLOCK = 1 << 20
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def regular_files(root: Path) -> list[Path]:
    """The regular files under the folder ``root``, in name order, found without following any
    symlink below ``root`` (``root`` itself may be one: the person named it)."""
    found: list[Path] = []
    for folder, _, names in os.walk(root, followlinks=False):  # a linked folder is listed, never entered
        for name in names:
            path = Path(folder, name)
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue  # gone since it was listed
            if stat.S_ISREG(mode):
                found.append(path)
    return sorted(found)


@contextmanager
def open_regular(path: Path) -> Iterator[io.BufferedReader]:
    """``path`` open for reading, binary; ``FileRefused`` when it is a symlink or not a regular file."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(path, "a symlink; only files inside the folder are read") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused(path, "not a regular file (a FIFO, a device or a socket); not read")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    with open(fd, "rb") as handle:  # owns the descriptor from here
        yield handle


def read_bounded(path: Path, limit: int, offset: int = 0) -> bytes:
    """At most ``limit`` bytes of the regular file ``path``, from ``offset``. Read in blocks:
    ``read(limit)`` allocates ``limit`` bytes first, 256 MB for a 50-byte JSON export."""
    blocks = []
    with open_regular(path) as handle:
        handle.seek(offset)
        while limit > 0 and (block := handle.read(min(limit, _BLOCK))):
            blocks.append(block)
            limit -= len(block)
    return b"".join(blocks)


def read_capped(path: Path, cap: int, what: str) -> bytes:
    """The whole regular file ``path``, which must hold at most ``cap`` bytes: ``FileRefused``
    naming ``what`` and the cap otherwise (read stops one byte past the cap)."""
    data = read_bounded(path, cap + 1)
    if len(data) > cap:
        raise FileRefused(path, f"over {cap:,} bytes, the most {what} may hold; not read")
    return data


def file_sha256(path: Path) -> str:
    """The SHA-256 of the regular file ``path``, read in blocks."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()
