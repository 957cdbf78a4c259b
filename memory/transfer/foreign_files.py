"""Which tool a file or folder given to ``memory import`` comes from, and reading it as that tool's.

A folder with ``.obsidian/`` is an Obsidian vault; a JSON file (``.json``, Letta's ``.af``) is a
Mem0 export, a Letta agent file, a Letta passage list or a ChatGPT export by its shape. Anything else is for the
ordinary importer (markdown, text, JSONL, ``memory export`` files).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ground import json_text
from memory.capture.formats import chatgpt_conversations, is_chatgpt_export
from memory.errors import CaptureFormatError, FileRefused, ForeignFormatError
from memory.safe_files import read_bounded
from memory.transfer.foreign import ForeignSource
from memory.transfer.letta import is_agent_file, is_passage_list, read_letta
from memory.transfer.mem0 import memories_of, read_mem0
from memory.transfer.obsidian import is_vault, read_vault

FOREIGN_KINDS = ("mem0", "letta", "obsidian", "chatgpt")
_JSON_SUFFIXES = frozenset({".json", ".af"})
#: A JSON export is parsed whole, and parsing takes several times its size in memory: past this it
#: is refused, with the reason (a vault is read note by note). The read stops one byte past it.
MAX_JSON_BYTES = 256 * 1024 * 1024


def read_foreign(path: Path, kind: str | None) -> ForeignSource | None:
    """``path`` read as ``kind`` (one of ``FOREIGN_KINDS``), or as whichever it looks like when
    ``kind`` is None; None when it looks like none of them. A file that is not what ``kind`` names,
    or is not JSON at all, is a ``ForeignFormatError`` that says what was expected."""
    if path.is_dir():
        if kind == "obsidian" or (kind is None and is_vault(path)):
            return read_vault(path)
        if kind is not None:
            raise ForeignFormatError(f"{path} is a folder: only an Obsidian vault is imported as a folder")
        return None
    if kind is None and path.suffix.lower() not in _JSON_SUFFIXES:
        return None
    if kind == "obsidian":
        raise ForeignFormatError(f"{path} is a file: an Obsidian vault is the folder that holds .obsidian/")
    doc = _json(path)
    if kind in (None, "mem0") and memories_of(doc) is not None:
        return read_mem0(doc, str(path))
    if kind in (None, "letta") and (is_agent_file(doc) or is_passage_list(doc)):
        return read_letta(doc, str(path))
    if kind in (None, "chatgpt") and is_chatgpt_export(doc):
        try:
            return ForeignSource("chatgpt", conversations=chatgpt_conversations(doc))
        except CaptureFormatError as exc:
            raise ForeignFormatError(f"{path}: {exc}") from None
    if kind is None:
        return None
    expected = {
        "mem0": 'a Mem0 export: {"results": [{"memory": ...}, ...]} or a list of such memories',
        "letta": 'a Letta agent file ({"agents": [...], "blocks": [...]}) or a list of archival passages',
        "chatgpt": "a ChatGPT export's conversations.json (a list of conversations with their mapping)",
    }[kind]
    raise ForeignFormatError(f"{path} is not {expected}")


def _json(path: Path) -> Any:
    try:  # a regular file only (a FIFO would wait for a writer for ever), and never past the cap
        data = read_bounded(path.resolve(), MAX_JSON_BYTES + 1)  # a link the person named is theirs to follow
    except FileRefused as exc:
        raise ForeignFormatError(f"{path} was not read: {exc.reason}") from None
    if len(data) > MAX_JSON_BYTES:
        raise ForeignFormatError(
            f"{path} is over {MAX_JSON_BYTES // 2**20} MB; a JSON export is read whole, at most that: split it"
        )
    try:
        return json_text.loads(data.decode("utf-8"))
    except ValueError as exc:  # not UTF-8, not JSON, or nested too deeply
        raise ForeignFormatError(f"{path} is not JSON ({exc}); nothing was imported") from None
