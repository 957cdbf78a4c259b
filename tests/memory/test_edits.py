"""Editing a crystal's text keeps its history (issue 32): the old text is outdated, not lost."""

from __future__ import annotations

import pytest

from memory.errors import EditRefused
from memory.graph.provenance import attribution_chain, derivation_tree
from memory.intake.store import IntakeStore
from memory.model import Lifespan, NewCrystal, Origin, Quarantine, SemanticType
from memory.retrieval.query import SearchMode, SearchRequest
from memory.retrieval.search import search
from memory.supersession.edits import edit_text

DAY = 86_400_000


async def _texts(store: IntakeStore, query: str, **options: object) -> list[str]:
    hits = await search(store, SearchRequest(query, mode=SearchMode.KEYWORD, touch=False, **options))  # type: ignore[arg-type]
    return [h.crystal.text for h in hits]


async def test_an_edit_replaces_the_text_and_keeps_the_old_one_in_history(store: IntakeStore) -> None:
    old = (await store.remember(NewCrystal("My dentist is Dr. Hanssen", semantic_type=SemanticType.FACT,
                                           importance=0.8, importance_floor=0.8))).crystal  # fmt: skip
    new = await edit_text(store, old.id, "My dentist is Dr. Hansen", actor="cli", by_person=True)

    assert (new.semantic_type, new.origin, new.importance, new.importance_floor) == (
        SemanticType.FACT, Origin.USER_INPUT, 0.8, 0.8)  # fmt: skip
    outdated = await store.get(old.id)
    assert outdated.text == "My dentist is Dr. Hanssen" and outdated.superseded is not None
    assert outdated.superseded.by == new.id
    assert await _texts(store, "dentist") == ["My dentist is Dr. Hansen"]
    assert "My dentist is Dr. Hanssen" in await _texts(store, "dentist", include_superseded=True)
    tree = await derivation_tree(store, new.id)
    assert [p.crystal_id for p in tree.parents] == [old.id]
    assert (await attribution_chain(store, old.id))[-1].detail == f"by {new.id}: edited"
    assert (await attribution_chain(store, new.id))[-1].action == "supersedes"


async def test_an_edit_by_the_agent_keeps_the_origin_and_a_ttl_keeps_its_end(store: IntakeStore) -> None:
    old = (await store.remember(NewCrystal("Parcel locker code 5521", origin=Origin.SESSION,
                                           lifespan=Lifespan.TTL, ttl_ms=10 * DAY))).crystal  # fmt: skip
    new = await edit_text(store, old.id, "Parcel locker code 5512", actor="agent", by_person=False)
    assert new.origin is Origin.SESSION and new.lifespan is Lifespan.TTL
    assert new.expires_at_ms == old.expires_at_ms


@pytest.mark.parametrize(
    ("setup", "why"),
    [
        ("outdated", r"is outdated \(replaced by"),
        ("held", "is held for review"),
        ("skill", "is a skill"),
        ("same", "is already that"),
    ],
)
async def test_an_edit_the_crystal_cannot_take_is_refused_and_changes_nothing(
    store: IntakeStore, setup: str, why: str
) -> None:
    if setup == "held":
        target = await store.remember(NewCrystal("Pin your deps", origin=Origin.PEER, source="peer:ab",
                                                 quarantine=Quarantine("author below trusted")))  # fmt: skip
    elif setup == "skill":
        target = await store.remember(NewCrystal("Rotate logs with logrotate -f", semantic_type=SemanticType.SKILL))
    else:
        target = await store.remember(NewCrystal("The VPN is vpn1"))
    if setup == "outdated":
        await edit_text(store, target.crystal.id, "The VPN is vpn2", actor="cli", by_person=True)
    before = [c.id async for c in store.iter_live()]
    with pytest.raises(EditRefused, match=why):
        await edit_text(store, target.crystal.id, "The VPN is vpn1" if setup == "same" else "Changed", actor="cli",
                        by_person=True)  # fmt: skip
    assert "Changed" not in await _texts(store, "Changed", include_superseded=True)
    assert [c.id async for c in store.iter_live()] == before
