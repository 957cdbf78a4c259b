"""The narrow questions other packages ask of the crystals table, so none of them writes SQL on it.

The marketplace and the skill gossip keep their own tables in the same file; what they need of the
memory's (a crystal by its content hash, where crystals came from, the newest version of a peer's
skill, retiring older versions) is asked here.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.model import Crystal
from memory.storage.connection import select_in
from memory.storage.row_writes import crystal_by_hash
from memory.storage.store import MemoryStore


async def by_content_hash(store: MemoryStore, chash: str) -> Crystal | None:
    """The crystal holding exactly this text, whatever its lifecycle (texts are stored once)."""
    return await crystal_by_hash(store.reader(), chash)


async def content_hash_of(store: MemoryStore, crystal_id: str) -> str | None:
    """The content hash of ``crystal_id`` in any lifecycle; None for an id never stored."""
    async with store.reader().execute("SELECT content_hash FROM crystals WHERE id = ?", (crystal_id,)) as cursor:
        row = await cursor.fetchone()
    return str(row[0]) if row else None


async def sources_of(store: MemoryStore, crystal_ids: Sequence[str]) -> dict[str, str]:
    """Each crystal's source (``peer:<hex>``, a path, ...), for the ids that have one."""
    rows = await select_in(
        store.reader(), "SELECT id, source FROM crystals WHERE source IS NOT NULL AND id IN ({marks})", crystal_ids
    )
    return {str(r[0]): str(r[1]) for r in rows}


async def released_sources_of(store: MemoryStore, crystal_ids: Sequence[str]) -> dict[str, str]:
    """``sources_of`` the crystals that are not held in quarantine: only what the person let through
    earns its author anything."""
    rows = await select_in(
        store.reader(),
        "SELECT id, source FROM crystals WHERE source IS NOT NULL AND quarantined = 0 AND id IN ({marks})",
        crystal_ids,
    )
    return {str(r[0]): str(r[1]) for r in rows}


async def newest_skill_version(store: MemoryStore, stable_skill_id: str, source: str) -> tuple[str, int] | None:
    """(crystal id, version) of the newest version of a skill from one source."""
    async with store.reader().execute(
        "SELECT id, skill_version FROM crystals WHERE stable_skill_id = ? AND source = ? "
        "ORDER BY skill_version DESC LIMIT 1",
        (stable_skill_id, source),
    ) as cursor:
        row = await cursor.fetchone()
    return (str(row[0]), int(row[1] or 0)) if row else None


async def skill_crystal_ids(store: MemoryStore, stable_skill_id: str, limit: int = 100) -> list[str]:
    """Ids of the crystals of one skill (any source, version or lifecycle), newest version first,
    at most ``limit``: the marketplace checks their exact text against a signed hash."""
    async with store.reader().execute(
        "SELECT id FROM crystals WHERE stable_skill_id = ? ORDER BY skill_version DESC LIMIT ?",
        (stable_skill_id, limit),
    ) as cursor:
        return [str(r[0]) for r in await cursor.fetchall()]


async def deprecate_skill_versions(store: MemoryStore, stable_skill_id: str, source: str, *, by: str) -> int:
    """Mark every version of a skill from ``source`` deprecated by ``by`` (a crystal id, or "revoked"),
    except ``by`` itself; returns how many were marked."""
    async with store.transaction() as db:
        cursor = await db.execute(
            "UPDATE crystals SET deprecated = 1, deprecated_by = ?, updated_at_ms = ? "
            "WHERE stable_skill_id = ? AND source = ? AND id != ? AND deprecated = 0",
            (by, store.now_ms(), stable_skill_id, source, by),
        )
        count = int(cursor.rowcount)
        await cursor.close()
    return count


async def mark_verified(store: MemoryStore, chash: str, *, by: str) -> None:
    """Mark the crystal holding this text verified by ``by`` (a management key, hex), once."""
    async with store.transaction() as db:
        await db.execute(
            "UPDATE crystals SET is_verified = 1, verified_by = ? WHERE content_hash = ? AND is_verified = 0",
            (by, chash),
        )


async def audit_trail(store: MemoryStore, crystal_id: str) -> list[tuple[str | None, str, str, str, int]]:
    """(from, to, reason, actor, ts_ms) of every lifecycle transition of a crystal, oldest first."""
    async with store.reader().execute(
        "SELECT from_state, to_state, reason, actor, ts_ms FROM audit_log WHERE crystal_id = ? ORDER BY seq",
        (crystal_id,),
    ) as cursor:
        return [(r[0], r[1], r[2], r[3], r[4]) for r in await cursor.fetchall()]
