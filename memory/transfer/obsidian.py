"""An Obsidian vault: a folder of markdown notes (``.obsidian/`` beside them marks one).

Each note is chunked as any markdown file is (at headings and paragraphs), and each chunk becomes a
crystal:
- its front matter's ``tags`` and the note's inline ``#tags`` are its tags;
- ``created``/``date`` in the front matter (else the file's time) is its time;
- the note's title is its context, so a chunk is found by the note it sits in;
- ``[[wikilinks]]`` read as their shown text, and each becomes a ``references`` link to the first
  chunk of the note it names (by file name, path or alias); so do those listed in the front
  matter's ``links`` (a property Obsidian shows, and ``memory export --to obsidian`` writes).

Other front matter keys, embedded files (``![[…]]``), and the vault's settings have no counterpart
here and are named in the summary. Notes are read as any imported folder is (``memory.safe_files``:
regular files, no symlink followed); a note over ``MAX_NOTE_BYTES`` is left out and named.
"""

from __future__ import annotations

import re
from pathlib import Path

from ground.authority import Speaker
from memory.errors import FileRefused
from memory.importer import text_chunks
from memory.model import MAX_CONTEXT_CHARS, MAX_TEXT_CHARS, NewCrystal, Origin
from memory.safe_files import FileIdentity, listed_files, read_capped
from memory.transfer.foreign import Entry, ForeignSource, clean_tags, time_ms

#: A note is read whole to be chunked; one past this is left out (a vault's notes are pages, not dumps).
MAX_NOTE_BYTES = 8 * 1024 * 1024

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]|#]*)(#[^\[\]|]*)?(?:\|([^\[\]]*))?\]\]")
_INLINE_TAG = re.compile(r"(?<![\w/&#])#([A-Za-z_][\w/-]*)")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_USED_KEYS = frozenset({"tags", "tag", "aliases", "alias", "created", "date", "links"})


def is_vault(folder: Path) -> bool:
    return folder.is_dir() and (folder / ".obsidian").is_dir()


def note_paths(vault: Path) -> list[tuple[Path, FileIdentity]]:
    """Every note, in a stable order, outside hidden folders (``.obsidian``, ``.trash``), with its
    identity as listed (a read refuses another file put in its place since)."""
    return [
        (p, identity)
        for p, identity in listed_files(vault)
        if p.suffix == ".md" and not any(part.startswith(".") for part in p.relative_to(vault).parts)
    ]


def front_matter(lines: list[str]) -> tuple[dict[str, object], int]:
    """The YAML front matter's simple keys (``key: value``, ``key: [a, b]`` and ``key:`` followed by
    ``- item`` lines) and how many lines it took; ({}, 0) without one."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    values: dict[str, object] = {}
    current: str | None = None
    for number, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return values, number + 1
        item = re.match(r"^\s+-\s+(.*)$", line)
        if item and current is not None:
            listed = values.setdefault(current, [])
            if isinstance(listed, list):
                listed.append(_scalar(item.group(1)))
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", line)
        if pair:
            current, raw = pair.group(1).lower(), pair.group(2).strip()
            if raw.startswith("[") and raw.endswith("]"):
                values[current] = [_scalar(v) for v in raw[1:-1].split(",") if v.strip()]
            elif raw:
                values[current] = _scalar(raw)
            else:
                values[current] = []
    return {}, 0  # never closed: not front matter


def _scalar(raw: str) -> str:
    return raw.strip().strip("'\"")


def _target(name: str) -> str:
    return name.strip().lower().removesuffix(".md")


def read_vault(vault: Path) -> ForeignSource:
    source = ForeignSource("obsidian")
    left_out: set[str] = set()
    for path, identity in note_paths(vault):
        relative = path.relative_to(vault).as_posix()
        try:
            data = read_capped(path, MAX_NOTE_BYTES, "a note", identity=identity)
            lines = data.decode("utf-8", errors="replace").splitlines()
        except FileRefused as exc:  # over the cap, or swapped for a link or a FIFO since the walk
            left_out.add(f"{relative}: {exc.reason}")
            continue
        meta, body_start = front_matter(lines)
        left_out.update(f"front matter: {k}" for k in meta if k not in _USED_KEYS)
        note_tags = clean_tags([*clean_tags(meta.get("tags")), *clean_tags(meta.get("tag"))])
        when = time_ms(meta.get("created")) or time_ms(meta.get("date")) or int(path.stat().st_mtime * 1000)
        title = path.stem
        first_key = f"note:{_target(relative)}"
        for name in (path.stem, relative, *_names(meta.get("aliases")), *_names(meta.get("alias"))):
            source.aliases.setdefault(_target(name), first_key)
        listed = [_target(m.group(2)) for v in _names(meta.get("links")) for m in _WIKILINK.finditer(v)]
        stored = 0
        for start, chunk in text_chunks(lines[body_start:]):
            raw = "\n".join(chunk).strip()
            if not raw:
                continue
            links: list[str] = []
            embeds = 0

            def shown(match: re.Match[str], links: list[str] = links) -> str:
                nonlocal embeds
                if match.group(1):  # ![[picture.png]]: an embedded file, not a link
                    embeds += 1
                    return ""
                target = match.group(2)
                if target.strip():
                    links.append(_target(target))
                return match.group(4) or target or (match.group(3) or "").lstrip("#")

            text = _WIKILINK.sub(shown, raw).strip()
            if embeds:
                left_out.add("embedded files (![[…]])")
            if not text:
                continue
            inline = clean_tags(_INLINE_TAG.findall(_CODE.sub("", text)))
            key = first_key if stored == 0 else f"{first_key}#{stored}"
            stored += 1
            crystal = NewCrystal(
                text[:MAX_TEXT_CHARS],
                origin=Origin.INDEXED,
                speaker=Speaker.FILE,
                created_at_ms=when,
                context=title[:MAX_CONTEXT_CHARS],
                source_path=str(path),
                source="obsidian",
                line_start=body_start + start,
                line_end=body_start + start + len(chunk) - 1,
                tags=clean_tags([*note_tags, *inline]),
            )
            if stored == 1:  # the note's first chunk stands for the note: its listed links are its own
                links.extend(t for t in listed if t)
            source.entries.append(Entry(key, crystal, tuple(dict.fromkeys(links))))
    source.left_out = sorted(left_out)
    return source


def _names(raw: object) -> list[str]:
    if isinstance(raw, list):
        return [str(v) for v in raw if str(v).strip()]
    return [raw] if isinstance(raw, str) and raw.strip() else []
