"""Imports from the memory tools people use today: what a reader of a Mem0 export, a Letta agent
file or an Obsidian vault hands the store, and how it is stored.

A reader is pure: it turns its source into ``Entry`` values, names what it could not read
(``skipped``) and what the source holds that has no counterpart here (``left_out``). Storing goes
in batches that each commit: after Ctrl-C or a crash, running the same import again stores the
rest, and what was stored before counts as already known (the same text is one crystal).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from memory.capture.formats import Conversation
from memory.given_time import all_with_given_time
from memory.graph.links import add_links
from memory.importer import iso_time_ms
from memory.intake.store import IntakeStore
from memory.model import MAX_TAG_CHARS, MAX_TAGS, AssociationType, NewCrystal

#: What a tag may be once read from a source: a word of letters, digits, '_', '-', '/' or ':'.
_TAG_CHARS = re.compile(r"[^\w/:-]+")
_BATCH = 200


@dataclass(frozen=True, slots=True)
class Entry:
    """One crystal to store, under the source's own name for it (a Mem0 id, a Letta block line or
    passage id, a note and its chunk), with the names of the entries it links to."""

    key: str
    crystal: NewCrystal
    links_to: tuple[str, ...] = ()


@dataclass(slots=True)
class ForeignSource:
    kind: str  # "mem0", "letta", "obsidian" or "chatgpt"
    entries: list[Entry] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "entry 12: no text", each with its reason
    left_out: list[str] = field(default_factory=list)  # the source's fields with no counterpart here
    aliases: dict[str, str] = field(default_factory=dict)  # another name -> an entry's key (a link target)
    # A ChatGPT export: conversations for capture (``memory.capture``), not entries.
    conversations: list[Conversation] = field(default_factory=list)


@dataclass(slots=True)
class ForeignImported:
    stored: int = 0  # new crystals
    known: int = 0  # the same text was already in memory: merged into that crystal
    skipped: int = 0
    links: int = 0
    dangling_links: int = 0  # links to a note the source does not hold
    conversations: int = 0  # a ChatGPT export's, captured
    messages_left_out: int = 0  # small talk, echoes, system messages (capture's reasons)


#: The year 10,000: a later "time" is a wrong number, not a date (and would not fit a database integer).
MAX_TIME_MS = 253_402_300_800_000


def clean_tags(raw: object) -> tuple[str, ...]:
    """A source's tags as this node's: a list, or a string split on commas and spaces; '#' dropped,
    other characters outside a tag's alphabet become '-'; empty and duplicate ones dropped."""
    items: list[object] = (
        list(raw) if isinstance(raw, list | tuple) else re.split(r"[,\s]+", raw) if isinstance(raw, str) else []
    )
    tags: list[str] = []
    for item in items:
        if not isinstance(item, str | int):
            continue
        tag = _TAG_CHARS.sub("-", str(item).strip().lstrip("#")).strip("-").lower()[:MAX_TAG_CHARS]
        if tag and tag not in tags:
            tags.append(tag)
    return tuple(tags[:MAX_TAGS])


def time_ms(value: object) -> int | None:
    """An ISO 8601 time (with or without zone, 'Z', or a space for 'T'), a date, or epoch seconds or
    milliseconds, as epoch ms; None when it is none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        ms = value if value > 1e11 else value * 1000
        return int(ms) if 0 <= ms <= MAX_TIME_MS else None  # NaN, infinities, 10**400: no time
    return iso_time_ms(value) if isinstance(value, str) and value.strip() else None


async def store_entries(
    store: IntakeStore, source: ForeignSource, progress: Callable[[int], None] | None = None
) -> ForeignImported:
    """Store every entry (typed, deduplicated and checked for supersession as any import is), then
    link each to the entries it names. ``progress`` hears how many entries each batch wrote."""
    done = ForeignImported(skipped=len(source.skipped))
    ids: dict[str, str] = {}
    for start in range(0, len(source.entries), _BATCH):
        batch = source.entries[start : start + _BATCH]
        result = await store.remember_many(all_with_given_time((e.crystal for e in batch), store.now_ms()))
        done.stored += result.created
        done.known += result.duplicates
        ids.update(zip((e.key for e in batch), result.ids, strict=True))
        if progress is not None:
            progress(len(batch))
    edges: list[tuple[str, str]] = []
    for entry in source.entries:
        for target in entry.links_to:
            dst = ids.get(source.aliases.get(target, target))
            if dst is None:
                done.dangling_links += 1
            elif dst != ids[entry.key]:
                edges.append((ids[entry.key], dst))
    done.links = await add_links(store, edges, AssociationType.REFERENCES, actor="import")
    return done


async def capture_all(
    store: IntakeStore, source: ForeignSource, progress: Callable[[int], None] | None = None
) -> ForeignImported:
    """Capture each conversation of a ChatGPT export (``memory.capture``: what is worth keeping, with
    the messages it came from). A message captured before is skipped, so after Ctrl-C the same import
    goes on where it stopped and stores nothing twice. ``progress`` hears each conversation done."""
    from memory.capture.capture import capture, default_session

    done = ForeignImported()
    for conversation in source.conversations:
        if not conversation.session:
            conversation = replace(conversation, session=default_session(conversation))
        report = await capture(store, conversation, actor="import", embed=False)
        done.conversations += 1
        done.stored += report.stored
        done.known += report.merged
        done.messages_left_out += sum(report.left_out.values())
        if progress is not None:
            progress(1)
    return done
