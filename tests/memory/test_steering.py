"""Keep-this (a stated importance is a floor) and the steering reward: feedback and skill outcomes
move it, search ranking and consolidation follow it (issue 16)."""

from __future__ import annotations

from pathlib import Path

import pytest

from marketplace.executions import record_execution
from marketplace.schema import MARKET_SCHEMA
from memory.cognition.steering import give_feedback, record_outcome
from memory.dynamics.consolidation import consolidate
from memory.dynamics.importance import importance
from memory.embedders.hashing import HashingEmbedder
from memory.errors import CrystalNotFound
from memory.intake.store import IntakeStore
from memory.model import Feedback, Hormones, Lifecycle, NewCrystal, SemanticType
from memory.retrieval.query import SearchRequest
from memory.retrieval.search import search
from memory.storage.crystal_queries import audit_trail
from tests.memory.conftest import DAY, FakeClock


async def test_a_stated_importance_is_a_floor_consolidation_keeps(store: IntakeStore, clock: FakeClock) -> None:
    stated = (await store.remember(NewCrystal("User's name is Douglas", importance=0.8, importance_floor=0.8))).crystal
    unstated = (await store.remember(NewCrystal("The lift was out of order", importance=0.8))).crystal
    clock.advance(400 * DAY)
    await consolidate(store, levels=Hormones())
    assert (await store.get(stated.id)).importance == pytest.approx(0.8)
    assert (await store.get(stated.id)).lifecycle is not Lifecycle.EXPIRED
    with pytest.raises(CrystalNotFound):  # nobody asked for it in 400 days: forgotten
        await store.get(unstated.id)


def test_a_floor_cannot_exceed_the_importance_it_floors() -> None:
    with pytest.raises(ValueError, match="importance_floor"):
        NewCrystal("x", importance=0.3, importance_floor=0.5)


async def test_feedback_moves_the_reward_toward_its_target_and_is_attributed(store: IntakeStore) -> None:
    crystal = (await store.remember(NewCrystal("The staging DB is on db2"))).crystal
    useful = await give_feedback(store, crystal.id, Feedback.USEFUL, actor="agent")
    assert useful.steering_reward == pytest.approx(0.3)
    again = await give_feedback(store, crystal.id, Feedback.USEFUL, actor="agent")
    assert again.steering_reward == pytest.approx(0.3 + 0.3 * 0.7)
    wrong = await give_feedback(store, crystal.id, Feedback.WRONG, actor="local")
    assert wrong.steering_reward == pytest.approx(0.51 + 0.5 * (-1 - 0.51))
    for _ in range(20):
        last = await give_feedback(store, crystal.id, Feedback.OUTDATED, actor="local")
    assert -1.0 <= last.steering_reward < -0.99
    async with store.reader().execute(
        "SELECT actor, detail FROM attributions WHERE crystal_id = ? AND action = 'steered' ORDER BY seq", (crystal.id,)
    ) as cursor:
        rows = [tuple(r) for r in await cursor.fetchall()]
    assert rows[0] == ("agent", "feedback useful: 0.000 -> 0.300") and rows[2][0] == "local"


async def test_feedback_steers_search_ranking(store: IntakeStore) -> None:
    first = (
        await store.remember(NewCrystal("boiler service is due in March", semantic_type=SemanticType.FACT))
    ).crystal
    second = (
        await store.remember(NewCrystal("boiler service is due in April", semantic_type=SemanticType.FACT))
    ).crystal
    before = [h.crystal.id for h in await search(store, SearchRequest("boiler service due", touch=False))]
    loser = before[0]
    await give_feedback(store, loser, Feedback.OUTDATED, actor="local")
    after = await search(store, SearchRequest("boiler service due", explain=True, touch=False))
    assert {first.id, second.id} == set(before[:2])
    assert after[0].crystal.id != loser
    demoted = next(h for h in after if h.crystal.id == loser)
    assert demoted.explain is not None and demoted.explain.steering_factor == pytest.approx(1 - 0.3 * 0.3)


async def test_wrong_crystals_fade_sooner(store: IntakeStore, clock: FakeClock) -> None:
    neutral = (await store.remember(NewCrystal("the gate code is 4411"))).crystal
    wrong = (await store.remember(NewCrystal("the gate code is 1144"))).crystal
    for _ in range(2):
        await give_feedback(store, wrong.id, Feedback.WRONG, actor="local")  # -0.5, then -0.75
    clock.advance(30 * DAY)
    # Unused for 30 days: 0.0952 * e^(-1.296) = 0.0260 (kept); times 1 + 0.5 * -0.75: 0.0163 (< 0.02).
    report = await consolidate(store, levels=Hormones())
    assert report.expired_by_decay == 1
    assert (await store.get(neutral.id)).importance == pytest.approx(0.0260, abs=1e-4)
    assert (await audit_trail(store, wrong.id))[-1][1] == "expired"


async def test_consolidation_writes_the_formula_with_curiosity_steering_and_floor(
    store: IntakeStore, clock: FakeClock
) -> None:
    crystal = (await store.remember(NewCrystal("a boosted memory", curiosity_boost=0.4, emotional_valence=0.2))).crystal
    steered = await give_feedback(store, crystal.id, Feedback.USEFUL, actor="local")
    await store.touch([crystal.id] * 2)
    clock.advance(5 * DAY)
    await consolidate(store, levels=Hormones())
    expected = importance(
        access_count=2, reinforced_at_ms=clock.now - 5 * DAY, now_ms=clock.now, valence=0.2, decays=True,
        decay_rate_per_ms=5e-10, emotion_decay_resistance=0.5, curiosity_boost=0.4,
        steering_reward=steered.steering_reward,
    )  # fmt: skip
    assert (await store.get(crystal.id)).importance == pytest.approx(expected, abs=1e-9)
    # f(2) = 0.2592; lambda = 5e-10 * (1 - 0.2 * 0.5) over 5 days: e^-0.1944 = 0.8233; x 1.4 x 1.15.
    assert expected == pytest.approx(0.2592 * 0.8233 * 1.4 * 1.15, abs=1e-3)


async def test_skill_outcomes_accumulate_the_reward(tmp_path: Path, clock: FakeClock) -> None:
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder(), now_ms=clock, schemas=(MARKET_SCHEMA,))
    try:
        skill = (
            await store.remember(NewCrystal("Rotate logs: logrotate -f", semantic_type=SemanticType.SKILL))
        ).crystal
        await record_execution(store, skill.id, success=True, reward_milli=800)
        assert (await store.get(skill.id)).steering_reward == pytest.approx(0.15 * 0.8)
        await record_execution(store, skill.id, success=False, reward_milli=0)
        assert (await store.get(skill.id)).steering_reward == pytest.approx(0.12 + 0.15 * (-1 - 0.12))
        done = await record_outcome(store, skill.id, success=True, reward=1.0, actor="agent")
        assert done.steering_reward > -0.05
    finally:
        await store.close()
