"""Which messages of which conversations were captured, and into which crystals (``captured_messages``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.capture.formats import Message
from memory.storage.store import MemoryStore


def message_key(message: Message) -> str:
    """A message's key in its session: the format's id, else its position."""
    return message.message_id or f"#{message.position}"


async def captured_keys(store: MemoryStore, session: str) -> set[str]:
    async with store.reader().execute(
        "SELECT message_key FROM captured_messages WHERE session = ?", (session,)
    ) as cursor:
        return {str(row[0]) for row in await cursor.fetchall()}


async def captured_ids(store: MemoryStore, family: str) -> set[str]:
    """The keys captured in session ``family`` or any version of it (``family~<head>``, a watched
    file rewritten) that are a format's message ids (not a position, which another version of the
    file gives to another message)."""
    async with store.reader().execute(
        "SELECT message_key FROM captured_messages WHERE (session = ? OR substr(session, 1, ?) = ?) "
        "AND message_key NOT LIKE '#%'",
        (family, len(family) + 1, family + "~"),
    ) as cursor:
        return {str(row[0]) for row in await cursor.fetchall()}


async def stored_unrecorded(store: MemoryStore, source: str, fresh: Sequence[Message]) -> dict[int, str]:
    """Which of ``fresh`` (by position) a crystal of ``source`` already holds, word for word: stored,
    then the process died (SIGKILL, power) before they were recorded, which commits after the
    crystals. Read again with the turns written since, they would be grouped anew and stored twice."""
    if not fresh:
        return {}
    by_position = {m.position: m for m in fresh}
    async with store.reader().execute(
        "SELECT id, text, line_start, line_end FROM crystals WHERE source = ? AND line_end >= ?",
        (source, min(by_position) + 1),
    ) as cursor:
        rows = await cursor.fetchall()
    held: dict[int, str] = {}
    for crystal_id, text, start, end in rows:
        for position in range(int(start) - 1, int(end)):
            message = by_position.get(position)
            if message is not None and message.text in str(text):
                held[position] = str(crystal_id)
    return held


async def record_captured(store: MemoryStore, session: str, rows: Iterable[tuple[Message, str | None]]) -> None:
    """Mark each message captured, into its crystal (None: left out)."""
    now = store.now_ms()
    async with store.transaction() as db:
        await db.executemany(
            "INSERT INTO captured_messages (session, message_key, position, crystal_id, captured_ms) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session, message_key) DO NOTHING",
            [(session, message_key(m), m.position, crystal_id, now) for m, crystal_id in rows],
        )


@dataclass(frozen=True, slots=True)
class CapturedFrom:
    session: str
    messages: tuple[str, ...]  # their keys, in order: ids where the format had them, else '#<position>'
    positions: tuple[int, ...]


async def captured_from(store: MemoryStore, crystal_ids: Sequence[str]) -> dict[str, list[CapturedFrom]]:
    """Where each of ``crystal_ids`` was captured from (absent: it was not captured)."""
    if not crystal_ids:
        return {}
    marks = ",".join("?" * len(crystal_ids))
    async with store.reader().execute(
        f"SELECT crystal_id, session, message_key, position FROM captured_messages "
        f"WHERE crystal_id IN ({marks}) ORDER BY crystal_id, session, position",
        tuple(crystal_ids),
    ) as cursor:
        rows = await cursor.fetchall()
    grouped: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for crystal_id, session, key, position in rows:
        grouped.setdefault((str(crystal_id), str(session)), []).append((str(key), int(position)))
    out: dict[str, list[CapturedFrom]] = {}
    for (crystal_id, session), items in grouped.items():
        out.setdefault(crystal_id, []).append(
            CapturedFrom(session, tuple(k for k, _ in items), tuple(p for _, p in items))
        )
    return out
