"""Typed associations between crystals, added automatically after embedding or by hand (reading
them, with the provenance: ``memory.graph.provenance``).

Links are only ever added: a new crystal very similar to an old one ``updates``
it, a similar one is ``related_to`` it; nothing is deleted or hidden by linking.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.embedders.base import Vectors
from memory.errors import InvalidValue
from memory.model import AssociationType
from memory.storage.store import LinkSettings, MemoryStore


def link_type(similarity: float, settings: LinkSettings) -> AssociationType | None:
    """Which automatic link a similarity deserves, if any: above the thresholds, as the design has it."""
    if similarity > settings.updates_threshold:
        return AssociationType.UPDATES
    if similarity > settings.related_threshold:
        return AssociationType.RELATED_TO
    return None


async def nearest(store: MemoryStore, vector: Vectors) -> list[tuple[int, float]]:
    """The rowids nearest ``vector`` with their similarity: one KNN that linking and supersession share."""
    return await store.vectors.knn(store.reader(), vector, store.links.neighbours + 1)


async def link_neighbours(store: MemoryStore, crystal_id: str, neighbours: list[tuple[int, float]]) -> int:
    """Link ``crystal_id`` to those of ``neighbours`` (from ``nearest``) that are live and similar
    enough; returns how many links were added."""
    settings = store.links
    crystals = await store.get_many_by_rowid([r for r, _ in neighbours])
    now = store.now_ms()
    edges = []
    for rowid, similarity in neighbours:
        other = crystals.get(rowid)
        if other is None or other.id == crystal_id or other.lifecycle.value in ("expired", "archived"):
            continue
        kind = link_type(similarity, settings)
        if kind is not None:
            edges.append((crystal_id, other.id, kind.value, round(similarity, 4), now))
    if edges:
        async with store.transaction() as db:
            await db.executemany(
                "INSERT OR IGNORE INTO associations (src_id, dst_id, type, weight, created_ms) VALUES (?, ?, ?, ?, ?)",
                edges,
            )
    return len(edges)


async def auto_link(store: MemoryStore, crystal_id: str, vector: Vectors) -> int:
    """Link ``crystal_id`` to its nearest live neighbours; returns how many links were added."""
    return await link_neighbours(store, crystal_id, await nearest(store, vector))


async def link(
    store: MemoryStore, src_id: str, dst_id: str, kind: AssociationType, weight: float = 1.0, *, actor: str = "local"
) -> None:
    """Add a typed edge by hand (e.g. ``contradicts``, ``caused_by``); both crystals must exist and
    differ. The attribution chain of the source records who linked what."""
    if src_id == dst_id:
        raise InvalidValue("a crystal is not linked to itself")
    await store.get(src_id)
    await store.get(dst_id)
    now = store.now_ms()
    async with store.transaction() as db:
        await db.execute(
            "INSERT OR REPLACE INTO associations (src_id, dst_id, type, weight, created_ms) VALUES (?, ?, ?, ?, ?)",
            (src_id, dst_id, kind.value, weight, now),
        )
        await db.execute(
            "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'linked', ?, ?)",
            (src_id, actor, now, f"{kind.value} {dst_id}"),
        )


async def add_links(store: MemoryStore, edges: Sequence[tuple[str, str]], kind: AssociationType, *, actor: str) -> int:
    """Typed edges (weight 1) in one transaction, each new one recorded in its source's attribution
    chain as ``link`` records one; an edge already there is left as it is (an import run again).
    Returns how many were new."""
    now = store.now_ms()
    added = 0
    async with store.transaction() as db:
        for src, dst in dict.fromkeys(edges):
            cursor = await db.execute(
                "INSERT OR IGNORE INTO associations (src_id, dst_id, type, weight, created_ms) "
                "VALUES (?, ?, ?, 1.0, ?)",
                (src, dst, kind.value, now),
            )
            if cursor.rowcount:
                added += 1
                await db.execute(
                    "INSERT INTO attributions (crystal_id, actor, action, ts_ms, detail) VALUES (?, ?, 'linked', ?, ?)",
                    (src, actor, now, f"{kind.value} {dst}"),
                )
    return added
