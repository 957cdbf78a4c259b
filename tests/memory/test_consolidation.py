"""The consolidation engine: importance, lifecycle transitions, merge and unmerge, purge, dry run."""

from __future__ import annotations

import functools
import math

import pytest

from ground.authority import Speaker
from memory.design import (
    DECAY_RATE_PER_MS,
    EMOTION_DECAY_RESISTANCE,
    FORGET_THRESHOLD,
    MERGE_CORTISOL_SLOPE,
    MERGE_SIMILARITY,
    PROMOTE_THRESHOLD,
)
from memory.dynamics.consolidation import consolidate, unmerge
from memory.dynamics.importance import DecaySettings, access_strength, importance
from memory.errors import CrystalNotFound, StoreError
from memory.graph.provenance import derivation_tree
from memory.intake.store import IntakeStore
from memory.model import Hormones, Lifecycle, Lifespan, NewCrystal, Scope, SemanticType
from memory.retrieval.query import SearchRequest
from memory.retrieval.search import search
from memory.setup.settings import ConsolidationSettings
from memory.storage.crystal_queries import audit_trail
from memory.supersession.detect import supersede
from tests.memory.conftest import DAY, T0, FakeClock

NEAR_A = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa one"
NEAR_B = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa two"
LOOSE = DecaySettings(merge_similarity=0.8)


def test_importance_matches_the_hand_computed_formula() -> None:
    # f(3) = 1 - e^-0.4 = 0.329680; lambda = 5e-10 * (1 - 0.4 * 0.5) = 4e-10 per ms;
    # 10 days = 8.64e8 ms -> e^-0.3456 = 0.707796; I = 0.233346.
    at_defaults = functools.partial(
        importance, reinforced_at_ms=T0, decay_rate_per_ms=5e-10, emotion_decay_resistance=0.5
    )
    value = at_defaults(access_count=3, now_ms=T0 + 10 * DAY, valence=0.4, decays=True)
    assert value == pytest.approx(0.233346, abs=1e-6)
    assert access_strength(0) == pytest.approx(0.095163, abs=1e-6)
    assert access_strength(11) == pytest.approx(0.698806, abs=1e-6)
    lasting = at_defaults(access_count=0, now_ms=T0 + 400 * DAY, valence=0.0, decays=False)
    assert lasting == pytest.approx(0.095163, abs=1e-6)


async def test_consolidation_writes_the_same_importance_as_the_formula(store: IntakeStore, clock: FakeClock) -> None:
    crystal = (await store.remember(NewCrystal("a felt memory", emotional_valence=0.4))).crystal
    await store.touch([crystal.id] * 3)
    clock.advance(10 * DAY)
    report = await consolidate(store, levels=Hormones())
    assert report.rescored == 1 and report.emotion_decay_resistance == 0.5
    assert (await store.get(crystal.id)).importance == pytest.approx(0.233346, abs=1e-6)


async def test_each_transition_with_its_audit_row(store: IntakeStore, clock: FakeClock) -> None:
    faded = (await store.remember(NewCrystal("never used again"))).crystal
    used = (await store.remember(NewCrystal("asked about every day"))).crystal
    timed = (await store.remember(NewCrystal("parking ends at noon", lifespan=Lifespan.TTL, ttl_ms=DAY))).crystal
    frozen = (await store.remember(NewCrystal("pinned, never touched"))).crystal
    await store.transition(frozen.id, Lifecycle.FROZEN, reason="pinned by the user", actor="local")
    clock.advance(40 * DAY)
    await store.touch([used.id] * 12)  # f(12) = 0.7275 >= promote 0.7, reinforced just now
    # 40 days unreinforced: 0.0952 * e^(-5e-10 * 3.456e9) = 0.0169 < forget 0.02.
    assert access_strength(12) >= PROMOTE_THRESHOLD
    assert access_strength(0) * math.exp(-DECAY_RATE_PER_MS * 40 * DAY) < FORGET_THRESHOLD
    report = await consolidate(store, levels=Hormones())
    assert (report.expired_by_decay, report.expired_by_ttl, report.promoted) == (1, 1, 1)
    with pytest.raises(CrystalNotFound):
        await store.get(faded.id)
    trail = await audit_trail(store, faded.id)
    assert trail[-1][:2] == ("generated", "expired") and trail[-1][3] == "consolidation"
    assert "fell below the forget threshold" in trail[-1][2]
    assert (await audit_trail(store, timed.id))[-1][:3] == ("generated", "expired", "ttl elapsed")
    promoted = await store.get(used.id)
    assert promoted.lifecycle is Lifecycle.CONSOLIDATED
    assert (await audit_trail(store, used.id))[-1][:2] == ("activated", "consolidated")
    pinned = await store.get(frozen.id)
    assert pinned.lifecycle is Lifecycle.FROZEN and pinned.importance == pytest.approx(access_strength(0))
    async with store.reader().execute("SELECT crystal_id, stage, due_ms FROM replay_queue") as cursor:
        assert [tuple(r) for r in await cursor.fetchall()] == [(used.id, 0, clock.now + DAY)]


async def test_skills_and_permanent_crystals_never_decay(store: IntakeStore, clock: FakeClock) -> None:
    skill = (await store.remember(NewCrystal("How to rotate the TLS cert", semantic_type=SemanticType.SKILL))).crystal
    kept = (await store.remember(NewCrystal("my blood type is O+", lifespan=Lifespan.PERMANENT))).crystal
    clock.advance(400 * DAY)
    report = await consolidate(store, levels=Hormones())
    assert report.expired_by_decay == 0
    for crystal_id in (skill.id, kept.id):
        crystal = await store.get(crystal_id)
        assert crystal.lifecycle is Lifecycle.GENERATED
        assert crystal.importance == pytest.approx(access_strength(0))


async def test_merge_archives_the_weaker_with_a_parent_link_and_unmerge_restores_it(
    store: IntakeStore, clock: FakeClock
) -> None:
    strong = (await store.remember(NewCrystal(NEAR_A))).crystal
    weak = (await store.remember(NewCrystal(NEAR_B))).crystal
    await store.touch([strong.id] * 12 + [weak.id] * 2)
    report = await consolidate(store, settings=LOOSE, levels=Hormones())
    assert report.merged == 1
    assert report.merges[0].winner_id == strong.id and report.merges[0].loser_id == weak.id
    archived = await store.get(weak.id)
    assert archived.lifecycle is Lifecycle.ARCHIVED
    winner = await store.get(strong.id)
    assert winner.lifecycle is Lifecycle.CONSOLIDATED and winner.access_count == 14
    tree = await derivation_tree(store, weak.id)
    assert [(p.crystal_id, p.relation) for p in tree.parents] == [(strong.id, "merged_into")]
    assert "merged into" in (await audit_trail(store, weak.id))[-1][2]
    found = {h.crystal.id for h in await search(store, SearchRequest("november oscar papa", touch=False))}
    assert weak.id not in found and strong.id in found

    assert await unmerge(store, weak.id) == strong.id
    restored = await store.get(weak.id)
    assert restored.lifecycle is Lifecycle.ACTIVATED and restored.access_count == 2
    assert (await store.get(strong.id)).access_count == 12
    assert (await derivation_tree(store, weak.id)).parents == ()
    found = {h.crystal.id for h in await search(store, SearchRequest("november oscar papa", touch=False))}
    assert {weak.id, strong.id} <= found
    with pytest.raises(StoreError, match="was not merged"):
        await unmerge(store, weak.id)


async def test_a_near_copy_by_another_speaker_never_archives_the_persons_words(store: IntakeStore) -> None:
    """Issue 47: the agent's near-copy, more used than the person's own words, won the merge and
    archived them; now the speaker who stands higher wins whatever the use counts say."""
    persons = (await store.remember(NewCrystal(NEAR_A, speaker=Speaker.PERSON))).crystal
    agents = (await store.remember(NewCrystal(NEAR_B, speaker=Speaker.AGENT))).crystal
    await store.touch([agents.id] * 12 + [persons.id] * 2)
    report = await consolidate(store, settings=LOOSE, levels=Hormones())
    assert report.merged == 1
    assert (report.merges[0].winner_id, report.merges[0].loser_id) == (persons.id, agents.id)
    assert (await store.get(persons.id)).lifecycle is not Lifecycle.ARCHIVED


async def test_a_superseded_fact_is_never_merged_into_its_superseder(store: IntakeStore) -> None:
    old = (await store.remember(NewCrystal(NEAR_A))).crystal
    new = (await store.remember(NewCrystal(NEAR_B))).crystal
    await store.touch([old.id] * 12 + [new.id] * 12)  # as the merge test above: similar and strong enough
    await supersede(store, old.id, new.id, reason="test", actor="test")
    report = await consolidate(store, settings=LOOSE, levels=Hormones())
    assert report.merged == 0
    assert (await store.get(old.id)).lifecycle is not Lifecycle.ARCHIVED
    assert (await store.get(old.id)).text == NEAR_A and (await store.get(new.id)).text == NEAR_B


async def test_merging_respects_types_scopes_and_skills(store: IntakeStore) -> None:
    a = (await store.remember(NewCrystal(NEAR_A))).crystal
    b = (await store.remember(NewCrystal(NEAR_B, scope=Scope.SHARED))).crystal
    await store.touch([a.id] * 12 + [b.id] * 12)
    skill_a = (await store.remember(NewCrystal(NEAR_A + " skill", semantic_type=SemanticType.SKILL))).crystal
    skill_b = (await store.remember(NewCrystal(NEAR_B + " skill", semantic_type=SemanticType.SKILL))).crystal
    await store.touch([skill_a.id] * 12 + [skill_b.id] * 12)
    report = await consolidate(store, settings=LOOSE, levels=Hormones())
    assert report.merged == 0


async def test_stress_raises_the_merge_threshold(store: IntakeStore) -> None:
    strong = (await store.remember(NewCrystal(NEAR_A))).crystal
    weak = (await store.remember(NewCrystal(NEAR_B))).crystal
    await store.touch([strong.id] * 12 + [weak.id])
    vectors = await store.vectors.vectors_of(store.reader(), [1, 2])
    similarity = float(vectors[1] @ vectors[2])
    settings = DecaySettings(merge_similarity=similarity - 0.02)
    stressed = await consolidate(store, settings=settings, levels=Hormones(cortisol=1.0), dry_run=True)
    assert stressed.merge_threshold > similarity and stressed.merged == 0
    calm = await consolidate(store, settings=settings, levels=Hormones(), dry_run=True)
    assert calm.merge_threshold < similarity and calm.merged == 1
    assert stressed.merge_threshold == pytest.approx(settings.merge_similarity + MERGE_CORTISOL_SLOPE, abs=1e-3)


def test_the_defaults_are_the_designs_numbers() -> None:
    """Seed 000's decayRate, forgetThreshold, promoteThreshold, mergeOverlapThreshold and
    emotionDecayResistance, for the engine and for the config, from ``memory.design``."""
    engine, config = DecaySettings(), ConsolidationSettings()
    design = (DECAY_RATE_PER_MS, FORGET_THRESHOLD, PROMOTE_THRESHOLD, MERGE_SIMILARITY, EMOTION_DECAY_RESISTANCE)
    assert design == (5e-10, 0.02, 0.7, 0.92, 0.5)
    for settings in (engine, config):
        assert (settings.decay_rate_per_ms, settings.forget_threshold, settings.promote_threshold,
                settings.merge_similarity, settings.emotion_decay_resistance) == design  # fmt: skip


async def test_dry_run_reports_and_changes_nothing(store: IntakeStore, clock: FakeClock) -> None:
    faded = (await store.remember(NewCrystal("never used again"))).crystal
    clock.advance(40 * DAY)
    trail_before = await audit_trail(store, faded.id)
    dry = await consolidate(store, levels=Hormones(), dry_run=True)
    assert dry.dry_run and dry.expired_by_decay == 1
    assert [c.crystal_id for c in dry.changes] == [faded.id]
    after = await store.get(faded.id)
    assert after.lifecycle is Lifecycle.GENERATED and after.importance == 0.5  # not even rescored
    assert await audit_trail(store, faded.id) == trail_before
    real = await consolidate(store, levels=Hormones())
    assert real.expired_by_decay == 1


async def test_purge_after_retention_keeps_the_history(store: IntakeStore, clock: FakeClock) -> None:
    gone = (await store.remember(NewCrystal("forget me"))).crystal
    kept = (await store.remember(NewCrystal("keep me"))).crystal
    await store.forget(gone.id)
    settings = DecaySettings(retention_days=7)
    assert (await consolidate(store, settings=settings, levels=Hormones())).purged == 0
    clock.advance(7 * DAY)
    await store.touch([kept.id])
    assert (await consolidate(store, settings=settings, levels=Hormones())).purged == 1
    async with store.reader().execute("SELECT count(*) FROM crystals WHERE id = ?", (gone.id,)) as cursor:
        assert (await cursor.fetchone()) == (0,)
    assert await store.vectors.count(store.reader()) == 1
    assert [t[1] for t in await audit_trail(store, gone.id)] == ["generated", "expired"]
    assert math.isclose((await store.get(kept.id)).importance, access_strength(1))
