"""The hormonal state: decay to homeostasis, events, the network override, persistence, modulation."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memory.dynamics.endocrine import META_KEY, Endocrine
from memory.dynamics.hormones import (
    SPIKES,
    TRIGGERS,
    Event,
    HormonalState,
    HormoneSettings,
    NetworkOverride,
    consolidation_modulation,
    decayed,
    detect_events,
    effective,
    halts_untrusted_ingestion,
    retrieval_modulation,
    spiked,
    valence,
)
from memory.embedders.hashing import HashingEmbedder
from memory.intake.store import IntakeStore
from memory.model import Hormones, NewCrystal, Origin
from memory.retrieval.query import SearchRequest, Weights
from memory.retrieval.search import modulated, search
from tests.memory.conftest import T0, FakeClock

S = HormoneSettings()
MIN = 60_000


def test_each_level_halves_its_distance_to_homeostasis_per_half_life() -> None:
    state = HormonalState(dopamine=0.95, cortisol=0.82, oxytocin=0.60, at_ms=T0)
    # dopamine 30 min, cortisol 60, oxytocin 45: after one half-life each is halfway home.
    assert decayed(state, T0 + 30 * MIN, S).dopamine == pytest.approx(0.15 + 0.80 / 2)
    assert decayed(state, T0 + 60 * MIN, S).cortisol == pytest.approx(0.02 + 0.80 / 2)
    assert decayed(state, T0 + 45 * MIN, S).oxytocin == pytest.approx(0.10 + 0.50 / 2)
    two_hours = decayed(state, T0 + 120 * MIN, S)
    assert two_hours.dopamine == pytest.approx(0.15 + 0.80 / 16)
    assert two_hours.cortisol == pytest.approx(0.02 + 0.80 / 4)
    at_rest = decayed(state, T0 + 7 * 24 * 60 * MIN, S)
    assert (at_rest.dopamine, at_rest.cortisol, at_rest.oxytocin) == pytest.approx((0.15, 0.02, 0.10))


def test_levels_below_homeostasis_rise_to_it_and_tiny_levels_are_zero() -> None:
    low = HormonalState(dopamine=0.0, cortisol=0.0, oxytocin=0.0, at_ms=T0)
    assert decayed(low, T0 + 30 * MIN, S).dopamine == pytest.approx(0.075)
    settings = HormoneSettings(cortisol_home=0.0)
    faint = HormonalState(dopamine=0.2, cortisol=0.0015, oxytocin=0.1, at_ms=T0)
    assert decayed(faint, T0 + 60 * MIN, settings).cortisol == 0.0  # 0.00075 < 0.001 clamps to 0


def test_a_clock_going_backwards_changes_nothing() -> None:
    state = HormonalState(dopamine=0.9, cortisol=0.5, oxytocin=0.3, at_ms=T0)
    back = decayed(state, T0 - 3_600_000, S)
    assert (back.dopamine, back.cortisol, back.oxytocin, back.at_ms) == (0.9, 0.5, 0.3, T0)


def test_events_spike_by_the_designs_values_and_levels_stay_in_the_unit_interval() -> None:
    assert SPIKES == {
        Event.REWARD: (0.3, 0.0, 0.0),
        Event.ERROR: (0.0, 0.3, 0.0),
        Event.SOCIAL: (0.0, 0.0, 0.3),
        Event.ACHIEVEMENT: (0.4, 0.0, 0.2),
        Event.URGENCY: (0.0, 0.4, 0.0),
    }
    rest = HormonalState.at_rest(T0)  # 0.15, 0.02, 0.10
    assert spiked(rest, [Event.REWARD], T0, S).dopamine == pytest.approx(0.45)
    assert spiked(rest, [Event.ERROR], T0, S).cortisol == pytest.approx(0.32)
    assert spiked(rest, [Event.SOCIAL], T0, S).oxytocin == pytest.approx(0.40)
    achieved = spiked(rest, [Event.ACHIEVEMENT], T0, S)
    assert (achieved.dopamine, achieved.cortisol, achieved.oxytocin) == pytest.approx((0.55, 0.02, 0.30))
    assert spiked(rest, [Event.URGENCY], T0, S).cortisol == pytest.approx(0.42)
    maxed = spiked(rest, [Event.URGENCY] * 5, T0, S)
    assert maxed.cortisol == 1.0


def test_the_designs_trigger_words_and_only_whole_words() -> None:
    assert TRIGGERS == {
        Event.REWARD: ("success", "fixed"),
        Event.ACHIEVEMENT: ("shipped", "deployed", "milestone"),
        Event.ERROR: ("fail", "error", "bug", "crash"),
        Event.URGENCY: ("urgent", "deadline"),
        Event.SOCIAL: ("thank", "help", "appreciate", "team", "collaborate"),
    }
    assert detect_events("It was a success: I fixed it") == [Event.REWARD]
    assert detect_events("We deployed the release, a milestone") == [Event.ACHIEVEMENT]
    assert detect_events("The deploy FAILED with an error") == [Event.ERROR]
    assert detect_events("Another bug; the app crashed") == [Event.ERROR]
    assert detect_events("Urgent: the deadline is Friday") == [Event.URGENCY]
    assert detect_events("Thanks for the help, I appreciate the team") == [Event.SOCIAL]
    assert detect_events("Let's collaborate on it") == [Event.SOCIAL]
    assert detect_events("We shipped it together") == [Event.ACHIEVEMENT]  # "we" alone is not social
    assert detect_events("We went for a walk") == []
    assert detect_events("The volcano is 3,000 m high") == []
    assert detect_events("errors in terror, debugger, helpless") == [Event.ERROR]  # "errors" only


def test_valence_is_dopamine_plus_oxytocin_minus_cortisol_over_two() -> None:
    assert valence(Hormones(dopamine=0.6, cortisol=0.2, oxytocin=0.4)) == pytest.approx(0.4)
    assert valence(Hormones(dopamine=0.0, cortisol=1.0, oxytocin=0.0)) == pytest.approx(-0.5)


def test_network_override_raises_effective_cortisol_halts_ingestion_and_expires() -> None:
    calm = HormonalState(dopamine=0.2, cortisol=0.1, oxytocin=0.1, at_ms=T0)
    storm = HormonalState(0.2, 0.1, 0.1, T0, NetworkOverride(level=0.9, until_ms=T0 + 5 * MIN, reason="attack"))
    assert effective(calm, T0, S).cortisol == pytest.approx(0.1)
    assert effective(storm, T0 + MIN, S).cortisol == 0.9
    assert halts_untrusted_ingestion(storm, T0 + MIN)
    # Local cortisol above the network's level wins: the override is a floor, not a cap.
    stressed = HormonalState(0.2, 0.95, 0.1, T0, NetworkOverride(level=0.5, until_ms=T0 + 5 * MIN, reason="x"))
    assert effective(stressed, T0, S).cortisol == 0.95
    after = T0 + 5 * MIN
    assert not halts_untrusted_ingestion(storm, after)
    assert effective(storm, after, S).cortisol < 0.1
    assert decayed(storm, after, S).override is None


def test_modulation_follows_the_designs_formulas() -> None:
    levels = Hormones(dopamine=0.4, cortisol=0.5, oxytocin=0.3)
    mod = consolidation_modulation(levels, base_resistance=0.5, base_merge_threshold=0.92)
    assert mod.decay_resistance == pytest.approx(0.3 * 0.5 + 0.2 * 0.4 + 0.2 * 0.3)  # 0.29
    assert mod.emotion_decay_resistance == pytest.approx(0.5 + 0.29)
    assert mod.merge_threshold == pytest.approx(0.92 + 0.03 * 0.5)
    storm = consolidation_modulation(Hormones(dopamine=1.0, cortisol=1.0, oxytocin=1.0))
    assert storm.decay_resistance == 0.5  # the design's cap
    assert storm.merge_threshold == pytest.approx(0.95)
    calm = consolidation_modulation(Hormones())
    assert (calm.decay_resistance, calm.merge_threshold) == (0.0, 0.92)
    rewarded = retrieval_modulation(Hormones(dopamine=0.8, cortisol=0.5, oxytocin=0.0))
    assert rewarded.importance_boost == pytest.approx(1.16)
    assert rewarded.recency_bias == pytest.approx(1.15)
    weights = modulated(Weights(), Hormones(dopamine=0.5, cortisol=1.0, oxytocin=0.0))
    assert weights.importance_weight == pytest.approx(Weights().importance_weight * 1.1)
    assert weights.recency_weight == pytest.approx(Weights().recency_weight * 1.3)


@pytest.mark.parametrize(
    "text",
    ["", "{", "[]", '{"dopamine": 0.1}', '{"dopamine": "x", "cortisol": 0, "oxytocin": 0, "at_ms": 1}'],
)
def test_malformed_persisted_state_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="malformed hormonal state"):
        HormonalState.from_json(text)


def test_state_round_trips_through_json() -> None:
    state = HormonalState(0.3, 0.4, 0.5, T0, NetworkOverride(0.9, T0 + 1, "why", "ab" * 32))
    assert HormonalState.from_json(state.to_json()) == state


async def test_state_persists_across_restarts_and_keeps_decaying(tmp_path: Path, clock: FakeClock) -> None:
    path = tmp_path / "m.db"
    store = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
    endocrine = await Endocrine.attach(store)
    await endocrine.observe([Event.URGENCY, Event.URGENCY])  # cortisol 0.02 + 2 x 0.4 = 0.82
    await endocrine.apply_override(NetworkOverride(level=0.9, until_ms=T0 + 10 * MIN, reason="storm"))
    await store.close()
    clock.advance(60 * MIN)
    store = await IntakeStore.open(path, HashingEmbedder(), now_ms=clock)
    try:
        again = await Endocrine.attach(store)
        assert again.state().cortisol == pytest.approx(0.02 + 0.80 / 2)  # one half-life later
        assert again.state().override is None  # it expired while the node was down
        assert not again.halts_untrusted_ingestion()
    finally:
        await store.close()


async def test_a_damaged_saved_state_starts_at_rest(tmp_path: Path, clock: FakeClock) -> None:
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder(), now_ms=clock)
    try:
        await store.set_meta(META_KEY, "{not json")
        endocrine = await Endocrine.attach(store)
        assert endocrine.levels() == Hormones(0.15, 0.02, 0.10)
    finally:
        await store.close()


async def test_crystals_carry_the_hormonal_influence_of_their_moment(store: IntakeStore) -> None:
    endocrine = await Endocrine.attach(store)
    plain = (await store.remember(NewCrystal("Volcanic soil is rich in minerals", origin=Origin.INDEXED))).crystal
    assert plain.hormones == Hormones(0.15, 0.02, 0.10)
    assert plain.emotional_valence == pytest.approx((0.15 + 0.10 - 0.02) / 2)
    said = (await store.remember(NewCrystal("It works now, the build is fixed", origin=Origin.SESSION))).crystal
    # The reward in the text spiked dopamine first; session content adds the oxytocin baseline.
    assert said.hormones.dopamine == pytest.approx(0.45)
    assert said.hormones.oxytocin == pytest.approx(0.10 + 0.1)
    assert endocrine.state().dopamine == pytest.approx(0.45)
    explicit = Hormones(0.5, 0.5, 0.5)
    kept = (await store.remember(NewCrystal("explicit snapshot", hormones=explicit))).crystal
    assert kept.hormones == explicit
    bulk = await store.remember_many([NewCrystal(f"bulk line {i}", origin=Origin.SESSION) for i in range(3)])
    first = await store.get(bulk.ids[0])
    assert first.hormones.oxytocin == pytest.approx(0.2)
    assert math.isclose(endocrine.state().dopamine, 0.45)  # bulk imports stamp but do not spike


async def test_dopamine_makes_importance_count_more_in_search(store: IntakeStore) -> None:
    endocrine = await Endocrine.attach(store)
    await store.remember(NewCrystal("marathon plan for spring"))
    hits = await search(store, SearchRequest("marathon", explain=True))
    calm_factor = hits[0].explain.importance_factor if hits[0].explain else 0.0
    await endocrine.observe([Event.REWARD, Event.REWARD, Event.REWARD])
    hits = await search(store, SearchRequest("marathon", explain=True))
    assert hits[0].explain is not None and hits[0].explain.importance_factor > calm_factor
