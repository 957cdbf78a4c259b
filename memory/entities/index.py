"""Keeping the entity graph: each crystal owed a reading (``entities_owed``, kept by triggers: schema
v25) is read by ``memory.entities.recognise`` and its mentions written down.

An entity is one key ("caroline", "caroline sister"). Its kind is the surest any mention gave: a
speaker is a person, a name after "in" a place, and a name seen only bare stays a thing until
something says more. A relation remembers its owner's key, and a name given right after it ("my
sister Ana") becomes the relation's alias, so "Ana" finds what was said of Caroline's sister; the
alias goes with the crystal that gave it (a trigger), so an erasure takes it too.
"""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from memory.entities.recognise import Kind, Mention, entity_key, mentions
from memory.storage.connection import select_in
from memory.storage.store import MemoryStore

#: Crystals read per call: one transaction, a few milliseconds of rules each.
BATCH = 256
#: How sure each kind is, when two mentions of one key disagree.
_SURENESS = {Kind.THING: 0, Kind.PROJECT: 1, Kind.ORGANISATION: 2, Kind.PLACE: 2, Kind.PERSON: 3}


async def index_owed(store: MemoryStore, *, limit: int = BATCH) -> int:
    """Read up to ``limit`` crystals owed a reading and write their mentions; how many were read."""
    async with store.reader().execute(
        "SELECT o.crystal_rowid, c.text, c.voice, c.context FROM entities_owed o "
        "LEFT JOIN crystals c ON c.rowid = o.crystal_rowid ORDER BY o.crystal_rowid LIMIT ?",
        (limit,),
    ) as cursor:
        owed = [(int(r[0]), r[1], r[2], r[3]) for r in await cursor.fetchall()]
    if not owed:
        return 0
    read = [(rowid, mentions(text, voice=voice, context=context)) for rowid, text, voice, context in owed if text]
    async with store.transaction() as db:
        # only what is still owed: a write since the read owes a reading again, and is left for it
        still = await _still_owed(db, [rowid for rowid, *_ in owed])
        await write_mentions(db, [(rowid, found) for rowid, found in read if rowid in still])
        await db.executemany("DELETE FROM entities_owed WHERE crystal_rowid = ?", [(r,) for r in still])
    return len(owed)


async def index_all(store: MemoryStore) -> int:
    """Read every crystal owed a reading (a bench, a test, or ``memory entities`` on a quiet store)."""
    total = 0
    while read := await index_owed(store, limit=BATCH * 4):
        total += read
    return total


async def owed_count(store: MemoryStore) -> int:
    async with store.reader().execute("SELECT count(*) FROM entities_owed") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def _still_owed(db: aiosqlite.Connection, rowids: Sequence[int]) -> set[int]:
    marks = ", ".join("?" * len(rowids))
    async with db.execute(f"SELECT crystal_rowid FROM entities_owed WHERE crystal_rowid IN ({marks})", rowids) as c:
        return {int(r[0]) for r in await c.fetchall()}


async def write_mentions(db: aiosqlite.Connection, read: Sequence[tuple[int, list[Mention]]]) -> None:
    """Write each crystal's mentions: entities by key (the surer kind kept), the crystal's links to
    them, and the aliases it gave."""
    every = {m.key: m for _, found in read for m in found}
    for mention in [m for _, found in read for m in found if m.alias]:
        alias_key = entity_key(mention.alias or "")
        every.setdefault(alias_key, Mention(mention.alias or "", alias_key, mention.kind, mention.role))
    if not every:
        return
    ids = await _entity_ids(db, list(every.values()))
    links, aliases = [], []
    for rowid, found in read:
        for mention in found:
            links.append((rowid, ids[mention.key], mention.role.value))
            if mention.alias:
                alias_key = entity_key(mention.alias)
                # "my sister Ana": Ana is Caroline's sister, and the crystal names Ana too
                aliases.append((alias_key, ids[mention.key], rowid, mention.alias))
                aliases.append((mention.key, ids[alias_key], rowid, mention.name))
                links.append((rowid, ids[alias_key], "named"))
    await db.executemany(
        "INSERT OR IGNORE INTO crystal_entities (crystal_rowid, entity_id, role) VALUES (?, ?, ?)", links
    )
    await db.executemany(
        "INSERT OR IGNORE INTO entity_aliases (alias_key, entity_id, crystal_rowid, alias) VALUES (?, ?, ?, ?)",
        aliases,
    )


async def _entity_ids(db: aiosqlite.Connection, found: list[Mention]) -> dict[str, int]:
    surest: dict[str, Kind] = {}
    for mention in found:
        if mention.key not in surest or _SURENESS[mention.kind] > _SURENESS[surest[mention.key]]:
            surest[mention.key] = mention.kind
    await db.executemany(
        "INSERT INTO entities (key, name, kind, owner) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
        [(m.key, m.name, surest[m.key].value, m.owner) for m in found],
    )
    rows = await select_in(db, "SELECT key, id, kind FROM entities WHERE key IN ({marks})", list(surest))
    known = [(str(r[0]), int(r[1]), Kind(r[2])) for r in rows]
    surer = [(surest[key].value, i) for key, i, kind in known if _SURENESS[surest[key]] > _SURENESS[kind]]
    await db.executemany("UPDATE entities SET kind = ? WHERE id = ?", surer)
    return {key: entity_id for key, entity_id, _ in known}
