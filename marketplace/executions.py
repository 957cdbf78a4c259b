"""Executions of skills as the local agent reports them (`bitterbot-node skills record`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from marketplace.errors import InvalidValue
from memory.cognition.steering import record_outcome
from memory.errors import CrystalNotFound
from memory.model import KNOWLEDGE_TYPES
from memory.storage.crystal_queries import released_sources_of
from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True)
class ExecutionStats:
    executions: int = 0
    successes: int = 0
    reward_sum_milli: int = 0

    @property
    def success_rate_percent(self) -> int:
        return 100 * self.successes // self.executions if self.executions else 0


async def record_execution(
    store: MemoryStore, crystal_id: str, *, success: bool, reward_milli: int, actor: str = "agent"
) -> ExecutionStats:
    """Record one execution of a skill; returns the skill's stats including it."""
    if not 0 <= reward_milli <= 1000:
        raise InvalidValue(f"reward must be in [0, 1], got {reward_milli / 1000}")
    crystal = await store.get(crystal_id)  # CrystalNotFound for unknown or expired ids
    if crystal.semantic_type not in KNOWLEDGE_TYPES:
        raise InvalidValue(f"executions are recorded for skills and task patterns, not a {crystal.semantic_type}")
    async with store.transaction() as db:
        await db.execute(
            "INSERT INTO skill_executions (crystal_id, ts_ms, success, reward_milli, actor) VALUES (?, ?, ?, ?, ?)",
            (crystal_id, store.now_ms(), int(success), reward_milli, actor),
        )
    # The outcome steers the skill's ranking and life in memory (memory.cognition.steering).
    await record_outcome(store, crystal_id, success=success, reward=reward_milli / 1000, actor=actor)
    return await execution_stats(store, crystal_id)


async def inherit_executions(store: MemoryStore, skill_id: str, practice_ids: Sequence[str]) -> int:
    """Count the runs recorded against ``practice_ids`` as runs of ``skill_id``, the skill crystallised
    from them (each copied, with its time, outcome, reward and who recorded it); how many. The
    practices are the skill being done: their runs are the evidence the quality gate asks for."""
    if not practice_ids:
        return 0
    marks = ", ".join("?" * len(practice_ids))  # placeholders only: the ids are bound
    copy = (
        "INSERT INTO skill_executions (crystal_id, ts_ms, success, reward_milli, actor) "  # noqa: S608
        f"SELECT ?, ts_ms, success, reward_milli, actor FROM skill_executions WHERE crystal_id IN ({marks}) "
        "ORDER BY seq"
    )
    async with store.transaction() as db:
        cursor = await db.execute(
            copy,
            (skill_id, *practice_ids),
        )
        count = int(cursor.rowcount)
        await cursor.close()
    return count


async def execution_stats(store: MemoryStore, crystal_id: str) -> ExecutionStats:
    async with store.reader().execute(
        "SELECT count(*), coalesce(sum(success), 0), coalesce(sum(reward_milli), 0) FROM skill_executions "
        "WHERE crystal_id = ?",
        (crystal_id,),
    ) as cursor:
        row = await cursor.fetchone()
    if row is None:
        raise CrystalNotFound(crystal_id)
    return ExecutionStats(int(row[0]), int(row[1]), int(row[2]))


async def executions_per_crystal(store: MemoryStore) -> dict[str, tuple[int, int]]:
    """(executions, successes) of every crystal run at least once here."""
    async with store.reader().execute(
        "SELECT crystal_id, count(*), coalesce(sum(success), 0) FROM skill_executions GROUP BY crystal_id"
    ) as cursor:
        return {str(r[0]): (int(r[1]), int(r[2])) for r in await cursor.fetchall()}


async def executions_by_source(store: MemoryStore, prefix: str = "peer:") -> dict[str, tuple[int, int]]:
    """(successes, failures) of the released skills from each source starting with ``prefix``: a
    run of a skill still held in quarantine earns its author nothing (issue 27: one recorded run
    of a held skill made a fresh key trusted)."""
    async with store.reader().execute(
        "SELECT crystal_id, sum(success), sum(1 - success) FROM skill_executions GROUP BY crystal_id"
    ) as cursor:
        per_crystal = {str(r[0]): (int(r[1]), int(r[2])) for r in await cursor.fetchall()}
    sources = await released_sources_of(store, list(per_crystal))
    out: dict[str, tuple[int, int]] = {}
    for crystal_id, (successes, failures) in per_crystal.items():
        source = sources.get(crystal_id)
        if source is not None and source.startswith(prefix):
            before = out.get(source, (0, 0))
            out[source] = (before[0] + successes, before[1] + failures)
    return out


async def good_run_days_by_source(store: MemoryStore, prefix: str = "peer:") -> dict[str, frozenset[int]]:
    """The days (ms // one day) on which a released skill from each source ran well here."""
    async with store.reader().execute(
        "SELECT crystal_id, ts_ms / 86400000 FROM skill_executions WHERE success = 1 GROUP BY crystal_id, 2"
    ) as cursor:
        rows = [(str(r[0]), int(r[1])) for r in await cursor.fetchall()]
    sources = await released_sources_of(store, list({crystal for crystal, _ in rows}))
    out: dict[str, set[int]] = {}
    for crystal, day in rows:
        source = sources.get(crystal)
        if source is not None and source.startswith(prefix):
            out.setdefault(source, set()).add(day)
    return {source: frozenset(days) for source, days in out.items()}
