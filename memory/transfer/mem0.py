"""A Mem0 export: the memories its ``get_all`` returns (``{"results": [...]}``, or the bare list),
each ``{"id", "memory", "created_at", "updated_at", "metadata", "categories", "user_id", ...}``.

Each memory becomes one crystal, typed by this node (Mem0 has no types), dated when its text was
last written (``updated_at``, else ``created_at``), with its categories and ``metadata.tags`` as
tags. Mem0's ``hash``, ``user_id``/``agent_id``/``run_id``, the rest of ``metadata`` and its
history of events have no counterpart here and are named in the summary.
"""

from __future__ import annotations

from typing import Any

from ground.authority import Speaker
from memory.model import MAX_TEXT_CHARS, NewCrystal, Origin
from memory.transfer.foreign import Entry, ForeignSource, clean_tags, time_ms

_KNOWN = frozenset({"id", "memory", "created_at", "updated_at", "metadata", "categories"})


def memories_of(doc: Any) -> list[Any] | None:
    """The list of memories in a parsed Mem0 export, or None when ``doc`` is not one."""
    items = doc.get("results", doc.get("memories")) if isinstance(doc, dict) else doc
    if (
        isinstance(items, list)
        and items
        and all(isinstance(m, dict) for m in items)
        and any(isinstance(m.get("memory"), str) for m in items)
    ):
        return items
    return None


def read_mem0(doc: Any, path: str) -> ForeignSource:
    source = ForeignSource("mem0")
    left_out: set[str] = set()
    for number, item in enumerate(memories_of(doc) or [], start=1):
        text = item.get("memory")
        if not isinstance(text, str) or not text.strip():
            source.skipped.append(f"memory {number}: no text")
            continue
        if len(text) > MAX_TEXT_CHARS:
            source.skipped.append(f"memory {number}: {len(text)} characters, more than {MAX_TEXT_CHARS}")
            continue
        metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        left_out.update(k for k in item if k not in _KNOWN and item[k] not in (None, "", [], {}))
        left_out.update(f"metadata.{k}" for k in metadata if k != "tags")
        key = str(item.get("id") or f"memory {number}")
        crystal = NewCrystal(
            text.strip(),
            origin=Origin.INDEXED,
            speaker=Speaker.FILE,
            created_at_ms=time_ms(item.get("updated_at")) or time_ms(item.get("created_at")),
            source_path=path,
            source=f"mem0:{key}"[:200],
            tags=clean_tags([*clean_tags(item.get("categories")), *clean_tags(metadata.get("tags"))]),
        )
        source.entries.append(Entry(key, crystal))
    source.left_out = sorted(left_out)
    return source
