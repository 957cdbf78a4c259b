"""A Letta agent file (``.af``) and a Letta archival export.

- The agent file's memory blocks (``blocks`` at the top, or an agent's ``memory_blocks`` or
  ``core_memory``): each non-empty line of a block's value is one crystal, tagged ``letta`` and
  the block's label. A line whose value is only "?" (a field the agent had not learned) is skipped.
- Archival passages, which an agent file does not carry: the JSON list Letta's passage export
  writes (``[{"id", "text", "tags", "created_at", ...}]``), one crystal each with its tags.

The system prompt, tools, model settings and the message history have no counterpart here and are
named in the summary; give the history to ``memory capture`` to keep what is worth keeping.
"""

from __future__ import annotations

import re
from typing import Any

from ground.authority import Speaker
from memory.model import MAX_TEXT_CHARS, NewCrystal, Origin
from memory.transfer.foreign import Entry, ForeignSource, clean_tags, time_ms

_UNKNOWN_VALUE = re.compile(r"^[^:]{1,60}:\s*\??\s*$")  # "Last name: ?" or "Age:"
_AGENT_PARTS = ("system", "tools", "tool_rules", "llm_config", "embedding_config", "messages")


def is_agent_file(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("agents"), list)


def is_passage_list(doc: Any) -> bool:
    return (
        isinstance(doc, list)
        and bool(doc)
        and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in doc)
        and any("archive_id" in p or str(p.get("id", "")).startswith("passage-") or "tags" in p for p in doc)
    )


def read_letta(doc: Any, path: str) -> ForeignSource:
    source = ForeignSource("letta")
    if is_passage_list(doc):
        _passages(doc, path, source)
        return source
    agents = [a for a in _list(doc.get("agents")) if isinstance(a, dict)]
    blocks = [b for b in _list(doc.get("blocks")) if isinstance(b, dict)]
    for agent in agents:
        for key in ("memory_blocks", "core_memory"):
            blocks.extend(b for b in _list(agent.get(key)) if isinstance(b, dict))
        source.left_out.extend(f"agents[].{part}" for part in _AGENT_PARTS if agent.get(part))
    seen: set[tuple[str, str]] = set()
    for number, block in enumerate(blocks, start=1):
        label = str(block.get("label") or f"block {number}")
        value = block.get("value")
        if not isinstance(value, str):
            source.skipped.append(f"block {label}: no value")
            continue
        for line_no, line in enumerate(value.splitlines(), start=1):
            text = line.strip().lstrip("-*• ").strip()
            if not text or (label, text) in seen:
                continue
            seen.add((label, text))
            if _UNKNOWN_VALUE.match(text):
                source.skipped.append(f"block {label} line {line_no}: no value yet ({text!r})")
                continue
            crystal = NewCrystal(
                text[:MAX_TEXT_CHARS],
                origin=Origin.INDEXED,
                speaker=Speaker.FILE,
                context=f"Letta {label} block",
                source_path=path,
                source=f"letta:{label}",
                line_start=line_no,
                line_end=line_no,
                tags=clean_tags(["letta", label]),
            )
            source.entries.append(Entry(f"{label}:{line_no}", crystal))
    for part in ("tools", "files", "sources", "groups"):
        if doc.get(part):
            source.left_out.append(part)
    source.left_out = sorted(set(source.left_out))
    return source


def _list(value: object) -> list[Any]:
    """``value`` if it is a list; anything else in a list's place holds nothing we read."""
    return value if isinstance(value, list) else []


def _passages(doc: list[Any], path: str, source: ForeignSource) -> None:
    for number, passage in enumerate(doc, start=1):
        text = passage["text"].strip()
        if not text or passage.get("is_deleted"):
            source.skipped.append(f"passage {number}: " + ("deleted" if text else "no text"))
            continue
        if len(text) > MAX_TEXT_CHARS:
            source.skipped.append(f"passage {number}: {len(text)} characters, more than {MAX_TEXT_CHARS}")
            continue
        key = str(passage.get("id") or f"passage {number}")
        crystal = NewCrystal(
            text,
            origin=Origin.INDEXED,
            speaker=Speaker.FILE,
            created_at_ms=time_ms(passage.get("created_at")),
            source_path=path,
            source=f"letta:{key}"[:200],
            tags=clean_tags(["letta", "archival", *clean_tags(passage.get("tags"))]),
        )
        source.entries.append(Entry(key, crystal))
    if any(p.get("metadata") for p in doc):
        source.left_out.append("metadata")
