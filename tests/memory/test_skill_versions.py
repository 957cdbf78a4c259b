"""Local skills: tags and category, a new version, freezing; typed links by hand (issue 16)."""

from __future__ import annotations

import pytest

from ground.authority import Speaker
from memory.emerging.skill_versions import clean_tags, edit_skill, freeze, skill_of
from memory.errors import StoreError
from memory.graph.links import link
from memory.graph.provenance import associations, attribution_chain
from memory.intake.store import IntakeStore
from memory.model import AssociationType, Lifecycle, NewCrystal, Origin, SemanticType, SkillVersion
from memory.retrieval.query import SearchRequest
from memory.retrieval.search import search

PERSON = Speaker.PERSON
ROTATE = "Rotate nginx logs without downtime: logrotate -f, then nginx -s reopen"


async def test_tags_and_category_are_set_in_place_and_searchable(store: IntakeStore) -> None:
    skill = (await store.remember(NewCrystal(ROTATE, semantic_type=SemanticType.SKILL))).crystal
    edited = await edit_skill(
        store, skill.id, tags=["Ops", "nginx", " log rotation "], category="Sysadmin", actor="x", speaker=Speaker.PERSON
    )
    assert edited.skill is not None
    assert (edited.skill.tags, edited.skill.category, edited.skill.version) == (
        ("ops", "nginx", "log-rotation"), "sysadmin", 1,
    )  # fmt: skip
    hits = await search(store, SearchRequest("log-rotation", touch=False))
    assert hits and hits[0].crystal.id == skill.id  # tags are in the keyword index
    assert (await attribution_chain(store, skill.id))[-1].action == "edited"


async def test_a_new_text_is_a_new_version_and_the_old_one_is_deprecated(store: IntakeStore) -> None:
    first = (await store.remember(NewCrystal(ROTATE, semantic_type=SemanticType.SKILL))).crystal
    second = await edit_skill(
        store, first.id, text=ROTATE + " (and check disk space first)", tags=["ops"], actor="x", speaker=Speaker.PERSON
    )
    assert second.skill is not None and first.skill is not None
    assert second.skill.stable_skill_id == first.skill.stable_skill_id
    assert (second.skill.version, second.skill.previous_version_id, second.skill.tags) == (2, first.id, ("ops",))
    old = await store.get(first.id)
    assert old.skill is not None and old.skill.deprecated and old.skill.deprecated_by == second.id
    with pytest.raises(ValueError, match="replaced by"):
        await edit_skill(store, first.id, text="yet another text for the old one", actor="x", speaker=PERSON)


async def test_a_frozen_skill_is_immutable_in_place(store: IntakeStore) -> None:
    skill = (await store.remember(NewCrystal(ROTATE, semantic_type=SemanticType.SKILL))).crystal
    frozen = await freeze(store, skill.id, actor="local")
    assert frozen.lifecycle is Lifecycle.FROZEN
    with pytest.raises(StoreError, match="frozen"):
        await edit_skill(store, skill.id, tags=["x"], actor="local", speaker=PERSON)
    newer = await edit_skill(
        store, skill.id, text=ROTATE + " on every host", actor="local", speaker=Speaker.PERSON
    )  # a new crystal
    assert newer.skill is not None and newer.skill.version == 2


async def test_only_own_skills_are_edited(store: IntakeStore) -> None:
    fact = (await store.remember(NewCrystal("Tomas lives in Tallinn", semantic_type=SemanticType.FACT))).crystal
    with pytest.raises(ValueError, match="only skills"):
        await edit_skill(store, fact.id, tags=["x"], actor="local", speaker=PERSON)
    peers = NewCrystal("Flush DNS: resolvectl flush-caches", semantic_type=SemanticType.SKILL, origin=Origin.PEER)
    theirs = (await store.remember(peers)).crystal
    with pytest.raises(ValueError, match="author's"):
        await freeze(store, theirs.id, actor="local")


def test_tags_are_bounded_and_need_a_skill() -> None:
    with pytest.raises(ValueError, match="at most 16"):
        clean_tags([f"t{i}" for i in range(17)])
    with pytest.raises(ValueError, match="40 characters"):
        clean_tags(["x" * 41])
    with pytest.raises(ValueError, match="give --type skill"):
        skill_of("a fact", SemanticType.FACT, ["x"], None)
    made = skill_of(ROTATE, SemanticType.SKILL, ["Ops"], "Sysadmin")
    assert isinstance(made, SkillVersion) and (made.tags, made.category) == (("ops",), "sysadmin")


async def test_typed_links_by_hand_are_shown_and_attributed(store: IntakeStore) -> None:
    cause = (await store.remember(NewCrystal("The disk filled up with nginx logs"))).crystal
    effect = (await store.remember(NewCrystal("The site was down for 40 minutes on Monday"))).crystal
    await link(store, effect.id, cause.id, AssociationType.CAUSED_BY, actor="agent")
    edges = await associations(store, cause.id)
    assert [(e.src_id, e.dst_id, e.type) for e in edges] == [(effect.id, cause.id, AssociationType.CAUSED_BY)]
    assert (await attribution_chain(store, effect.id))[-1].detail == f"caused_by {cause.id}"
    with pytest.raises(ValueError, match="itself"):
        await link(store, cause.id, cause.id, AssociationType.PART_OF)
