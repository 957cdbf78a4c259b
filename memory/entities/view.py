"""What memory knows about someone or something: the entities it names most, and one entity with the
crystals that name it, its aliases, what belongs to it ("Caroline's sister") and who else is named
beside it. Only what a search could show counts (``memory.governance.rules``: nothing forgotten,
held or superseded), so an entity named only in a forgotten crystal is not listed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory.entities.recognise import entity_key
from memory.model import CallerScope, Crystal
from memory.sensitivity import visibility_sql
from memory.storage.rows import SELECT_COLUMNS, crystal_from_row
from memory.storage.store import MemoryStore

_ENTITY_COLUMNS = "e.key, e.name, e.kind, count(*) AS n, e.owner, group_concat(DISTINCT c.speaker)"
#: Entities named beside one, listed with it.
RELATED = 12


@dataclass(frozen=True, slots=True)
class Entity:
    key: str
    name: str
    kind: str
    crystals: int  # how many current crystals name it
    owner: str | None = None  # a relation's owner's key
    #: whose words name it (``ground.authority.Speaker`` values): a name only a page or a peer gave
    #: reaches the agent marked as such, as their words do
    speakers: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "kind": self.kind, "crystals": self.crystals,
                "owner": self.owner, "named_by": list(self.speakers)}  # fmt: skip


@dataclass(frozen=True, slots=True)
class About:
    entity: Entity
    aliases: tuple[str, ...]
    crystals: tuple[Crystal, ...]  # the newest first
    related: tuple[Entity, ...]  # named beside it most often (``crystals``: how many times together)
    belongs: tuple[Entity, ...]  # relations it owns: "Caroline's sister"


def _visible(caller: CallerScope = CallerScope.LOCAL) -> tuple[str, dict[str, Any]]:
    clause, params = visibility_sql(caller, include_archived=False, include_held=False)
    return f"{clause} AND c.superseded_by IS NULL", params


async def named_most(store: MemoryStore, *, kind: str | None = None, limit: int = 50) -> list[Entity]:
    """The entities current crystals name most, with how many name each."""
    where, params = _visible()
    kind_clause = "AND e.kind = :kind" if kind else ""
    async with store.reader().execute(
        f"SELECT {_ENTITY_COLUMNS} FROM entities e "
        "JOIN crystal_entities ce ON ce.entity_id = e.id JOIN crystals c ON c.rowid = ce.crystal_rowid "
        f"WHERE {where} {kind_clause} GROUP BY e.id ORDER BY n DESC, e.key LIMIT :limit",
        {**params, "kind": kind, "limit": limit, "now_ms": store.now_ms()},
    ) as cursor:
        return [_entity(r) for r in await cursor.fetchall()]


async def about(store: MemoryStore, name: str, *, limit: int = 20) -> About | None:
    """What memory knows about ``name`` (a name, an alias, "Caroline's sister"), or None."""
    key = entity_key(name)
    db = store.reader()
    async with db.execute(
        "SELECT id FROM entities WHERE key = ? UNION SELECT entity_id FROM entity_aliases WHERE alias_key = ?",
        (key, key),
    ) as cursor:
        ids = [int(r[0]) for r in await cursor.fetchall()]
    if not ids:
        return None
    where, params = _visible()
    params = {**params, "now_ms": store.now_ms(), "limit": limit}
    marks = ", ".join(f":e{i}" for i in range(len(ids)))
    params.update({f"e{i}": entity_id for i, entity_id in enumerate(ids)})
    # the entity itself: the one whose key was asked, else the one an alias names most
    async with db.execute(
        "SELECT e.id, e.key, e.name, e.kind, e.owner, count(c.rowid) AS n, group_concat(DISTINCT c.speaker) "
        "FROM entities e "
        f"LEFT JOIN crystal_entities ce ON ce.entity_id = e.id LEFT JOIN crystals c ON c.rowid = ce.crystal_rowid "
        f"AND {where} WHERE e.id IN ({marks}) GROUP BY e.id ORDER BY e.key = :key DESC, n DESC",
        {**params, "key": key},
    ) as cursor:
        rows = list(await cursor.fetchall())
    if not rows or all(int(r[5]) == 0 for r in rows):
        return None
    main = rows[0]
    entity = _entity((main[1], main[2], main[3], main[5], main[4], main[6]))
    async with db.execute(
        f"SELECT DISTINCT {SELECT_COLUMNS} FROM crystals c JOIN crystal_entities ce ON ce.crystal_rowid = c.rowid "
        f"WHERE ce.entity_id IN ({marks}) AND {where} ORDER BY c.created_at_ms DESC, c.rowid DESC LIMIT :limit",
        params,
    ) as cursor:
        crystals = tuple(crystal_from_row(r) for r in await cursor.fetchall())
    async with db.execute(
        f"SELECT DISTINCT a.alias FROM entity_aliases a JOIN crystals c ON c.rowid = a.crystal_rowid "
        f"WHERE a.entity_id IN ({marks}) AND {where} ORDER BY a.alias",
        params,
    ) as cursor:
        aliases = tuple(str(r[0]) for r in await cursor.fetchall() if entity_key(str(r[0])) != entity.key)
    async with db.execute(
        f"SELECT {_ENTITY_COLUMNS} FROM crystal_entities mine "
        f"JOIN crystals c ON c.rowid = mine.crystal_rowid "
        "JOIN crystal_entities other ON other.crystal_rowid = mine.crystal_rowid "
        "AND other.entity_id != mine.entity_id "
        f"JOIN entities e ON e.id = other.entity_id "
        f"WHERE mine.entity_id IN ({marks}) AND other.entity_id NOT IN ({marks}) AND {where} "
        f"GROUP BY e.id ORDER BY n DESC, e.key LIMIT {RELATED}",
        params,
    ) as cursor:
        related = tuple(_entity(r) for r in await cursor.fetchall())
    async with db.execute(
        f"SELECT {_ENTITY_COLUMNS} FROM entities e "
        "JOIN crystal_entities ce ON ce.entity_id = e.id JOIN crystals c ON c.rowid = ce.crystal_rowid "
        f"WHERE e.owner = :owner AND {where} GROUP BY e.id ORDER BY n DESC, e.key LIMIT {RELATED}",
        {**params, "owner": entity.key},
    ) as cursor:
        belongs = tuple(_entity(r) for r in await cursor.fetchall())
    return About(entity, aliases, crystals, related, belongs)


def _entity(row: Any) -> Entity:
    speakers = tuple(sorted(set(str(row[5]).split(",")))) if row[5] else ()
    return Entity(str(row[0]), str(row[1]), str(row[2]), int(row[3]), row[4], speakers)
