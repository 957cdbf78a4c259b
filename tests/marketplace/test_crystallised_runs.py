"""Runs recorded against an emerging skill's practices are the skill being done: crystallised, the
skill carries them, and the quality gate counts them (issue 49 part 4)."""

from __future__ import annotations

from marketplace.executions import execution_stats, record_execution
from marketplace.quality import MIN_EXECUTIONS, refusals
from memory.intake.store import IntakeStore
from node.commands.skills_service import crystallise_report, emerging_report
from tests.marketplace.test_bounty_boost import practise


async def _the_pattern(store: IntakeStore) -> tuple[str, list[str]]:
    """The one emerging skill's id and its practices."""
    (pattern,) = (await emerging_report(store, 10))["emerging"]
    return pattern["id"], list(pattern["crystal_ids"])


async def test_the_practices_runs_count_towards_the_new_skills_gate(store: IntakeStore) -> None:
    await practise(store, 1, 3)
    first, ids = await _the_pattern(store)
    await record_execution(store, ids[0], success=True, reward_milli=900)
    await record_execution(store, ids[1], success=True, reward_milli=800)
    await record_execution(store, ids[1], success=False, reward_milli=0)

    done = await crystallise_report(store, first, "Run task one: all six steps", actor="cli")
    assert done["runs"] == 3
    skill = await store.get(done["skill"]["id"])
    stats = await execution_stats(store, skill.id)
    assert (stats.executions, stats.successes, stats.reward_sum_milli) == (3, 2, 1700)
    reasons = refusals(skill, stats, publishing=True)
    assert reasons == [], reasons  # listable on the practices' runs, without three more

    # The practices keep their own runs: nothing is moved, only counted for the skill too.
    assert (await execution_stats(store, ids[1])).executions == 2


async def test_a_pattern_never_run_gives_its_skill_no_runs_and_the_gate_still_asks_for_three(
    store: IntakeStore,
) -> None:
    await practise(store, 2, 3)
    first, _ = await _the_pattern(store)
    done = await crystallise_report(store, first, None, actor="cli")
    assert done["runs"] == 0
    skill = await store.get(done["skill"]["id"])
    reasons = refusals(skill, await execution_stats(store, skill.id), publishing=True)
    assert reasons == [f"it needs at least {MIN_EXECUTIONS} recorded executions, has 0"]
