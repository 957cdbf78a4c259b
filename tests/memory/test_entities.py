"""The entity graph (issue 52, part 3): who and what a text names, kept beside the crystals by
triggers and ``memory.entities.index``, and the graph leg of hybrid search."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memory.embedders import make_embedder
from memory.entities.index import index_all, index_owed, owed_count
from memory.entities.recognise import Kind, mentions
from memory.governance.erase import erase
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, Origin
from memory.retrieval.graph_leg import question_keys
from memory.retrieval.query import SearchMode, SearchRequest, Weights
from memory.retrieval.search import search


def _said(text: str, voice: str | None = None, context: str | None = None) -> dict[str, tuple[str, str, str | None]]:
    return {m.key: (m.kind.value, m.role.value, m.owner) for m in mentions(text, voice=voice, context=context)}


def test_the_voice_is_a_person_and_roles_are_nobody() -> None:
    assert _said("I started pottery classes", voice="Caroline") == {"caroline": ("person", "voice", None)}
    assert _said("I started pottery classes", voice="user") == {}
    assert _said("I started pottery classes", voice="assistant") == {}


def test_names_places_organisations_and_projects_by_their_words() -> None:
    said = _said("Yesterday I flew to Lisbon with Gina Torres to meet the Bank of Portugal about project Atlas.")
    assert said == {
        "lisbon": ("place", "named", None),
        "gina torres": ("person", "named", None),
        "bank of portugal": ("organisation", "named", None),
        "atlas": ("project", "named", None),
    }


def test_words_that_only_start_a_sentence_months_days_and_i_name_nobody() -> None:
    assert _said("Went hiking on Monday. Honestly I loved it. May was rainy, and I'm tired in June.") == {}
    assert _said("You've seen it. Don't go. We'll see, They'd know") == {}  # contractions (a v9 file had "you've")
    # mid-sentence a capital is taken at its word
    assert "hope" in _said("we named the puppy Hope last week")


def test_relations_belong_to_the_voice_a_name_or_the_one_other_person() -> None:
    mine = _said("My sister Ana just got promoted", voice="Caroline")
    assert mine["caroline sister"] == ("person", "relation", "caroline")
    assert mine["ana"] == ("thing", "named", None)
    theirs = _said("Adaeze told me her boss quit", voice="Tomasz")
    assert theirs["adaeze boss"] == ("person", "relation", "adaeze")
    # "her" with two other people named: whose boss is not guessed
    assert not any(owner for _, _, owner in _said("Adaeze and Gina said her boss quit", voice="Tomasz").values())
    # nor with nobody named, unless the turn before names one
    assert "adaeze boss" not in _said("her boss quit", voice="Tomasz")
    assert "adaeze boss" in _said("her boss quit", voice="Tomasz", context="How is Adaeze doing?")
    pet = {m.key: m for m in mentions("Her dog Pierogi loves the beach", context="Gina Torres came by")}
    assert pet["gina torres dog"].kind is Kind.THING and pet["gina torres dog"].alias == "Pierogi"


def test_a_question_is_read_by_its_names_and_its_lower_case_words() -> None:
    keys = question_keys("what does caroline's sister do in lisbon?")
    assert {"caroline", "caroline sister", "lisbon"} <= set(keys)
    assert "what" not in keys and "does" not in keys


def _on_disk(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.glob("m.db*")) if p.is_file())


async def _store(tmp_path: Path) -> IntakeStore:
    return await IntakeStore.open(tmp_path / "m.db", make_embedder("hashing"))


async def _entities(store: IntakeStore) -> dict[str, str]:
    async with store.reader().execute("SELECT key, kind FROM entities") as cursor:
        return {str(r[0]): str(r[1]) for r in await cursor.fetchall()}


async def test_every_write_is_owed_a_reading_and_a_change_of_words_replaces_its_mentions(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        first = (await store.remember(NewCrystal("Met Gina Torres in Lisbon", origin=Origin.USER_INPUT))).crystal
        assert await owed_count(store) == 1
        assert await index_owed(store) == 1 and await owed_count(store) == 0
        assert await _entities(store) == {"gina torres": "person", "lisbon": "place"}
        async with store.transaction() as db:  # words changed in place, as an edit from another device is
            await db.execute("UPDATE crystals SET text = 'Met Gina Torres in Porto' WHERE id = ?", (first.id,))
        # the old words' mentions went with them at once; Lisbon, named nowhere else, went too
        assert "lisbon" not in await _entities(store)
        assert await owed_count(store) == 1
        await index_all(store)
        assert await _entities(store) == {"gina torres": "person", "porto": "place"}
    finally:
        await store.close()


async def test_a_name_seen_bare_takes_the_surer_kind_a_later_mention_gives(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        await store.remember(NewCrystal("Pierogi ate my sock", origin=Origin.USER_INPUT))
        await index_all(store)
        assert (await _entities(store))["pierogi"] == "thing"
        await store.remember(NewCrystal("We took the train to Pierogi last year", origin=Origin.USER_INPUT))
        await index_all(store)
        assert (await _entities(store))["pierogi"] == "place"
    finally:
        await store.close()


async def test_an_erasure_leaves_no_name_it_alone_gave_in_the_file(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        kept = (await store.remember(NewCrystal("Lunch with Gina Torres", origin=Origin.USER_INPUT))).crystal
        gone = (
            await store.remember(
                NewCrystal("My brother Quillon Vasquez-Ortega lives in Zyzzogeton", origin=Origin.USER_INPUT)
            )
        ).crystal
        await index_all(store)
        assert {"quillon vasquez-ortega", "zyzzogeton"} <= set(await _entities(store))
        await erase(store, gone.id, actor="local", reason="test")
        assert set(await _entities(store)) == {"gina torres"}
        async with store.reader().execute("SELECT count(*) FROM entity_aliases") as cursor:
            assert (await cursor.fetchone() or [1])[0] == 0
        assert kept.id
    finally:
        await store.close()
    on_disk = _on_disk(tmp_path)
    assert b"Zyzzogeton" not in on_disk and b"zyzzogeton" not in on_disk
    assert b"quillon" not in on_disk.lower()


async def test_the_graph_leg_finds_what_was_said_of_someone_by_the_name_a_relation_gave(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        said = [
            ("Caroline", "my sister Ana is visiting next week"),
            ("Caroline", "Ana got the head nurse job at the clinic"),
        ]
        filler = [("Melanie", f"the weather on day {i} was grey and the bus was late again") for i in range(40)]
        for voice, text in said + filler:
            await store.remember(NewCrystal(text, origin=Origin.SESSION, voice=voice))
        await store.embed_backlog()
        await index_all(store)
        question = "What does Caroline's sister do for a living?"

        async def top(weights: Weights) -> list[str]:
            hits = await search(store, SearchRequest(question, mode=SearchMode.HYBRID, limit=3, touch=False,
                                                     weights=weights))  # fmt: skip
            return [h.crystal.text for h in hits]

        assert "Ana got the head nurse job at the clinic" in await top(Weights())
        assert "Ana got the head nurse job at the clinic" not in await top(replace(Weights(), graph_weight=0.0))
    finally:
        await store.close()


async def test_the_graph_leg_is_governed_as_the_other_legs_are(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        gone = (await store.remember(NewCrystal("Zorblat Quennick runs the relay", origin=Origin.USER_INPUT))).crystal
        for i in range(9):  # a name on every crystal tells nothing apart, and is not followed
            await store.remember(NewCrystal(f"the bus was late again on day {i}", origin=Origin.USER_INPUT))
        await store.embed_backlog()
        await index_all(store)
        request = SearchRequest("who is zorblat quennick", mode=SearchMode.HYBRID, touch=False, explain=True)
        hits = await search(store, request)
        assert [h.crystal.id for h in hits] == [gone.id] and hits[0].explain and hits[0].explain.graph_rank == 1
        await store.forget(gone.id)
        # still linked to its names (forgotten, not erased), and found by the graph leg no more
        assert await search(store, request) == []
    finally:
        await store.close()


@pytest.mark.parametrize("text", ["", "   "])
def test_nothing_named_in_nothing(text: str) -> None:
    assert mentions(text) == []
