"""Typed associations, automatic links, and provenance."""

from __future__ import annotations

import pytest

from memory.design import RELATED_LINK_SIMILARITY, UPDATES_LINK_SIMILARITY
from memory.graph.links import link, link_type
from memory.graph.provenance import associations, attribution_chain, derivation_tree
from memory.intake.store import IntakeStore
from memory.model import AssociationType, NewCrystal
from memory.setup.settings import MemorySettings
from memory.storage.store import LinkSettings


def test_links_follow_the_designs_thresholds() -> None:
    """The defaults are the design's (seed 003: RelatedTo above 0.7, Updates above 0.9), read from
    ``memory.design`` like the config's, so a drift shows here."""
    settings = LinkSettings()
    assert settings.related_threshold == RELATED_LINK_SIMILARITY
    assert settings.updates_threshold == UPDATES_LINK_SIMILARITY
    assert (MemorySettings().related_threshold, MemorySettings().updates_threshold) == (0.7, 0.9)
    assert link_type(UPDATES_LINK_SIMILARITY + 0.001, settings) is AssociationType.UPDATES
    assert link_type(UPDATES_LINK_SIMILARITY, settings) is AssociationType.RELATED_TO
    assert link_type(RELATED_LINK_SIMILARITY + 0.001, settings) is AssociationType.RELATED_TO
    assert link_type(RELATED_LINK_SIMILARITY, settings) is None


async def test_similar_crystals_are_linked_on_save_and_nothing_is_deleted(store: IntakeStore) -> None:
    old = (await store.remember(NewCrystal("The team standup is at 9:30 every weekday morning"))).crystal
    new = (await store.remember(NewCrystal("The team standup is at 9:45 every weekday morning"))).crystal
    unrelated = (await store.remember(NewCrystal("Volcanic soil is rich in minerals"))).crystal
    edges = await associations(store, new.id)
    assert [(e.src_id, e.dst_id) for e in edges] == [(new.id, old.id)]
    assert edges[0].type in (AssociationType.UPDATES, AssociationType.RELATED_TO)
    assert await associations(store, unrelated.id) == []
    assert (await store.get(old.id)).id == old.id  # still there


async def test_manual_typed_links(store: IntakeStore) -> None:
    a = (await store.remember(NewCrystal("The build broke"))).crystal
    b = (await store.remember(NewCrystal("A dependency released a breaking change"))).crystal
    await link(store, a.id, b.id, AssociationType.CAUSED_BY)
    assert [(e.type, e.dst_id) for e in await associations(store, a.id)] == [(AssociationType.CAUSED_BY, b.id)]


async def test_derivation_tree_goes_five_deep_and_attribution_is_ordered(store: IntakeStore) -> None:
    chain = [(await store.remember(NewCrystal("generation 0 root"))).crystal.id]
    for i in range(1, 8):
        chain.append(
            (
                await store.remember(
                    NewCrystal(f"generation {i} built on the last", parents=(chain[-1],), actor="dream")
                )
            ).crystal.id
        )
    tree = await derivation_tree(store, chain[-1])
    depth, node = 0, tree
    while node.parents:
        node = node.parents[0]
        depth += 1
    assert depth == 5
    assert node.crystal_id == chain[-6]
    assert tree.parents[0].relation == "derived_from"
    history = await attribution_chain(store, chain[-1])
    assert [(a.actor, a.action) for a in history] == [("dream", "created")]


async def test_a_store_opened_without_the_after_embedding_hook_makes_no_links(
    tmp_path: pytest.TempPathFactory,
) -> None:
    from pathlib import Path

    from memory.embedders.hashing import HashingEmbedder

    s = await IntakeStore.open(Path(str(tmp_path)) / "m.db", HashingEmbedder(), on_embedded=None)
    try:
        await s.remember(NewCrystal("same same same"))
        b = (await s.remember(NewCrystal("same same same same"))).crystal
        assert await associations(s, b.id) == []
    finally:
        await s.close()
