"""``memory export --to mem0|obsidian|letta``: a person's current memory in the formats the tools people use
today read, so they can leave with it (``memory export`` without ``--to`` keeps everything, for this
node to restore).

Only what is current goes: not what was superseded, held in quarantine, archived or expired, and
confidential crystals only when asked. A Letta export is the list of archival passages Letta's
passage export writes. A Mem0 export is ``get_all``'s shape (``{"results": [...]}``)
with this node's type, origin and importance under ``metadata``; an Obsidian vault is one note per
crystal, its type, time and tags in the front matter and its links as ``[[wikilinks]]`` there.
Both read back through ``memory import`` with their texts, times, tags and links.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from memory.model import Crystal, Lifecycle, Sensitivity
from memory.storage.store import MemoryStore

_UNSAFE_NAME = re.compile(r"[^\w\- ]+")


@dataclass(frozen=True, slots=True)
class ForeignExported:
    memories: int
    skipped_confidential: int
    links: int


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


async def current_crystals(store: MemoryStore, include_confidential: bool) -> tuple[list[Crystal], int]:
    """What a person would call their memory now, and how many confidential ones were left out."""
    kept: list[Crystal] = []
    confidential = 0
    async for crystal in store.iter_live():
        if crystal.superseded is not None or crystal.quarantined or crystal.lifecycle is Lifecycle.ARCHIVED:
            continue
        if crystal.sensitivity is Sensitivity.CONFIDENTIAL and not include_confidential:
            confidential += 1
            continue
        kept.append(crystal)
    return kept, confidential


async def _links(store: MemoryStore, ids: set[str]) -> list[tuple[str, str, str]]:
    async with store.reader().execute("SELECT src_id, dst_id, type FROM associations ORDER BY created_ms") as cursor:
        return [(s, d, t) async for s, d, t in cursor if s in ids and d in ids]


def mem0_memory(crystal: Crystal) -> dict[str, Any]:
    return {
        "id": crystal.id,
        "memory": crystal.text,
        "created_at": iso(crystal.created_at_ms),
        "updated_at": iso(crystal.created_at_ms),
        "categories": list(crystal.tags),
        "metadata": {
            "type": crystal.semantic_type.value,
            "origin": crystal.origin.value,
            "importance": round(crystal.importance, 4),
        },
    }


def letta_passage(crystal: Crystal) -> dict[str, Any]:
    """One archival passage as Letta's passage export writes it (``memory.transfer.letta`` reads it)."""
    return {"id": f"passage-{crystal.id}", "text": crystal.text, "tags": list(crystal.tags),
            "created_at": iso(crystal.created_at_ms), "metadata": {"type": crystal.semantic_type.value}}  # fmt: skip


async def export_letta(store: MemoryStore, sink: TextIO, *, include_confidential: bool = False) -> ForeignExported:
    """What is current as Letta archival passages (a JSON list): an agent's long-term memory there."""
    crystals, confidential = await current_crystals(store, include_confidential)
    json.dump([letta_passage(c) for c in crystals], sink, ensure_ascii=False, indent=1)
    sink.write("\n")
    return ForeignExported(len(crystals), confidential, 0)


async def export_mem0(store: MemoryStore, sink: TextIO, *, include_confidential: bool = False) -> ForeignExported:
    crystals, confidential = await current_crystals(store, include_confidential)
    json.dump(
        {"results": [mem0_memory(c) for c in crystals], "count": len(crystals)}, sink, ensure_ascii=False, indent=1
    )
    sink.write("\n")
    return ForeignExported(len(crystals), confidential, 0)


def note_name(crystal: Crystal) -> str:
    """A file name Obsidian and every file system accept: the first words, then the id's end, so two
    crystals that begin alike never share a note."""
    words = _UNSAFE_NAME.sub(" ", crystal.text).split()[:8]
    return f"{' '.join(words)[:60].strip() or 'memory'} {crystal.id[-8:]}"


def note_text(crystal: Crystal, links: list[str]) -> str:
    lines = [
        "---",
        f"id: {crystal.id}",
        f"type: {crystal.semantic_type.value}",
        f"created: {iso(crystal.created_at_ms)}",
    ]
    if crystal.tags:
        lines.append("tags: [" + ", ".join(crystal.tags) + "]")
    if links:
        lines.append("links:")
        lines.extend(f'  - "[[{name}]]"' for name in links)
    lines.extend(["---", crystal.text, ""])
    return "\n".join(lines)


async def export_obsidian(store: MemoryStore, vault: Path, *, include_confidential: bool = False) -> ForeignExported:
    """One note per crystal in ``vault`` (a new folder, made private), with ``.obsidian/`` so that
    Obsidian, and ``memory import``, know it as a vault."""
    crystals, confidential = await current_crystals(store, include_confidential)
    names = {c.id: note_name(c) for c in crystals}
    outgoing: dict[str, list[str]] = {}
    links = await _links(store, set(names))
    for src, dst, _ in links:  # a vault's links have no type: each reads back as `references`
        outgoing.setdefault(src, []).append(names[dst])
    notes = {f"{names[c.id]}.md": note_text(c, outgoing.get(c.id, [])) for c in crystals}
    await asyncio.to_thread(_write_vault, vault, notes)
    return ForeignExported(len(crystals), confidential, len(links))


def _write_vault(vault: Path, notes: dict[str, str]) -> None:
    """A new private folder: personal data, 0600 whatever the umask, never over an existing file."""
    vault.mkdir(mode=0o700)
    (vault / ".obsidian").mkdir(mode=0o700)
    for name, text in notes.items():
        with open(os.open(vault / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as note:
            note.write(text)
