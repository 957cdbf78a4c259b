"""The graph read back: a crystal's associations, what it was derived from (the derivation tree)
and who did what to it (the attribution chain). Links are added by ``memory.graph.links``.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.model import AssociationType
from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True)
class Association:
    src_id: str
    dst_id: str
    type: AssociationType
    weight: float
    created_ms: int


@dataclass(frozen=True, slots=True)
class ProvenanceNode:
    crystal_id: str
    relation: str | None  # how this node's parent in the tree was derived from it
    parents: tuple[ProvenanceNode, ...]


@dataclass(frozen=True, slots=True)
class Attribution:
    actor: str
    action: str
    ts_ms: int
    detail: str | None


async def associations(store: MemoryStore, crystal_id: str) -> list[Association]:
    """Every edge from or to the crystal, strongest first."""
    async with store.reader().execute(
        "SELECT src_id, dst_id, type, weight, created_ms FROM associations WHERE src_id = ? OR dst_id = ? "
        "ORDER BY weight DESC, created_ms",
        (crystal_id, crystal_id),
    ) as cursor:
        return [Association(r[0], r[1], AssociationType(r[2]), r[3], r[4]) for r in await cursor.fetchall()]


async def derivation_tree(store: MemoryStore, crystal_id: str, depth: int = 5) -> ProvenanceNode:
    """What the crystal was derived from, recursively, down to ``depth`` levels (cycles are cut)."""

    async def node(cid: str, relation: str | None, level: int, seen: frozenset[str]) -> ProvenanceNode:
        if level >= depth:
            return ProvenanceNode(cid, relation, ())
        async with store.reader().execute(
            "SELECT parent_id, relation FROM provenance WHERE child_id = ? ORDER BY parent_id", (cid,)
        ) as cursor:
            rows = await cursor.fetchall()
        parents = tuple([await node(p, rel, level + 1, seen | {p}) for p, rel in rows if p not in seen])
        return ProvenanceNode(cid, relation, parents)

    await store.get(crystal_id)
    return await node(crystal_id, None, 0, frozenset({crystal_id}))


async def attribution_chain(store: MemoryStore, crystal_id: str) -> list[Attribution]:
    """Who did what to the crystal, oldest first."""
    async with store.reader().execute(
        "SELECT actor, action, ts_ms, detail FROM attributions WHERE crystal_id = ? ORDER BY seq", (crystal_id,)
    ) as cursor:
        return [Attribution(r[0], r[1], r[2], r[3]) for r in await cursor.fetchall()]
