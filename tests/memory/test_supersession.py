"""Supersession: a newer crystal that updates an older one replaces it in search, reversibly.

The judge's rules on fixed similarities first, then a real store with the default embedder
(MiniLM: the thresholds are its similarities), saving statements a day apart as a person would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.errors import NotSuperseded
from memory.governance.llm import ChatEndpoint
from memory.graph.provenance import associations, attribution_chain
from memory.intake.store import IntakeStore
from memory.model import AssociationType, NewCrystal, Origin, SemanticType
from memory.retrieval.query import SUPERSEDED_FACTOR, SearchRequest
from memory.retrieval.search import search
from memory.supersession.detect import Supersession, supersede, unsupersede
from memory.supersession.judge import Candidate, choose, may_update
from memory.supersession.llm_judge import LlmJudge
from memory.working_memory.dream import dream
from memory.working_memory.memory_md import WorkingMemoryFiles
from memory.working_memory.synthesis import ExtractiveSynthesizer
from tests.memory.conftest import DAY, FakeClock, FakeModelServer

# --- the judge, on fixed similarities ---------------------------------------------------------

PHRASINGS = [
    ("Tomas lives in Riga.", "Actually, Tomas lives in Tallinn now."),
    ("The meeting is in room 4.", "The meeting is not in room 4 but in room 7."),
    ("My dentist is Dr. Hansen.", "My dentist is no longer Dr. Hansen; it is Dr. Berg."),
    ("The weekly sync is on Tuesdays.", "The weekly sync moved to Thursdays."),
    ("The project deadline is 14 June.", "The project deadline changed to 30 June."),
    ("The backup job runs at 2 am.", "The backup job runs at 4 am instead."),
]


@pytest.mark.parametrize(("old", "new"), PHRASINGS, ids=["actually", "not_x_but_y", "no_longer", "moved_to",
                                                          "changed_to", "instead"])  # fmt: skip
def test_each_correction_phrasing_replaces_the_old_statement_not_its_neighbours(old: str, new: str) -> None:
    subject = old.split(" is ")[0].split(" lives ")[0].split(" runs ")[0]
    neighbour = f"{subject} was mentioned by Priya."
    verdict = choose(new, [Candidate("old", old, 0.6), Candidate("other", neighbour, 0.55)])
    assert verdict is not None and verdict.key == "old"
    assert choose(new, [Candidate("other", neighbour, 0.55)]) is None  # the neighbour alone is not replaced


def test_a_near_copy_with_a_value_swapped_is_ordered_first_not_hidden() -> None:
    """Without a word of change, "My phone number is 912 34 567" may be a second number: it hides
    nothing (issue 28: a value swapped hid recurring amounts, runs and versions), and search puts it
    above the older one. With a word of change it replaces the older one."""
    old, new = "My phone number is 400 11 222.", "My phone number is 912 34 567."
    assert choose(new, [Candidate("old", old, 0.95)]) is None
    assert may_update(old, new, 0.95)
    changed = "My phone number is now 912 34 567."
    assert choose(changed, [Candidate("old", old, 0.9)]) is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Tomas lives in Riga.", "Tomas's brother moved to Tallinn."),  # someone else's
        ("I drive a grey Toyota.", "Actually, I also have an old bicycle."),  # adds, replaces nothing
        ("The staging database runs on db2.", "The production database was moved to db7."),  # another thing
        ("The office is at Storgata 12.", "The office at Storgata 12 moved its reception."),  # nothing changed
        ("The weekly sync is on Tuesdays.", "The quarterly planning moved to Thursdays."),  # nothing shared
    ],
    ids=["someone_elses", "adds", "other_qualifier", "nothing_changed", "nothing_shared"],
)
def test_statements_that_look_like_updates_replace_nothing(old: str, new: str) -> None:
    assert choose(new, [Candidate("old", old, 0.58)]) is None


# --- a real store with the default embedder ----------------------------------------------------


async def say(store: IntakeStore, clock: FakeClock, text: str, origin: Origin = Origin.SESSION) -> str:
    clock.advance(DAY)
    return (await store.remember(NewCrystal(text, origin=origin))).crystal.id


async def texts(store: IntakeStore, query: str, **options: object) -> list[str]:
    hits = await search(store, SearchRequest(query, touch=False, **options))  # type: ignore[arg-type]
    return [h.crystal.text for h in hits]


OLD = "Tomas lives in Riga."
NEIGHBOURS = ("Tomas works as a sound engineer.", "Tomas has a dog called Bruno.")
NEW = "Actually, Tomas is in Tallinn now, not Riga."


async def test_a_correction_supersedes_on_save_and_search_shows_the_current_fact(
    memory: IntakeStore, clock: FakeClock
) -> None:
    old = await say(memory, clock, OLD)
    for text in NEIGHBOURS:
        await say(memory, clock, text)
    new = await say(memory, clock, NEW)
    stale = await memory.get(old)
    assert stale.superseded is not None and stale.superseded.by == new
    assert stale.superseded.at_ms == (await memory.get(new)).created_at_ms
    for text in NEIGHBOURS:  # the same person's other facts stand
        assert (await memory.get(await say(memory, clock, text))).superseded is None

    found = await texts(memory, "Where does Tomas live?")
    assert found[0] == NEW and OLD not in found
    hits = await search(memory, SearchRequest("Tomas lives in Riga", touch=False, explain=True))
    assert hits[0].crystal.id == new and hits[0].explain is not None and hits[0].explain.in_place_of == old
    assert [h.crystal.id for h in hits].count(new) == 1

    history = await search(memory, SearchRequest("Where does Tomas live?", include_superseded=True, explain=True))
    ids = [h.crystal.id for h in history]
    assert ids.index(new) < ids.index(old)
    kept = history[ids.index(old)].explain
    assert kept is not None and kept.superseded_by == new and kept.superseded_factor == SUPERSEDED_FACTOR
    before = await texts(memory, "Where does Tomas live?", until_ms=stale.superseded.at_ms - 1)
    assert before[0] == OLD and NEW not in before  # as memory stood before the change

    links = await associations(memory, old)
    assert any(a.src_id == new and a.type is AssociationType.UPDATES for a in links)
    audit = await attribution_chain(memory, old)
    assert audit[-1].action == "superseded" and audit[-1].detail is not None
    assert audit[-1].detail.startswith(f"by {new}: names the old 'riga'")


async def test_unsupersede_makes_it_current_and_the_same_pair_is_never_judged_again(
    memory: IntakeStore, clock: FakeClock
) -> None:
    old = await say(memory, clock, OLD)
    new = await say(memory, clock, NEW)
    assert (await memory.get(old)).superseded is not None
    restored = await unsupersede(memory, old, actor="person")
    assert restored.superseded is None
    assert OLD in await texts(memory, "Where does Tomas live?")
    assert (await attribution_chain(memory, old))[-1].action == "unsuperseded"
    with pytest.raises(NotSuperseded):
        await unsupersede(memory, old)
    # Embedding the new one again (as an embedder change does) does not undo the person's decision.
    vector = memory.embedder.embed_documents([NEW])[0]
    await Supersession().detect(memory, new, vector, await memory.vectors.knn(memory.reader(), vector, 6))
    assert (await memory.get(old)).superseded is None
    # By hand it can be made again.
    assert (await supersede(memory, old, new, reason="said by person", actor="person")).superseded is not None


async def test_a_peer_never_supersedes_a_memory_of_this_node(memory: IntakeStore, clock: FakeClock) -> None:
    old = await say(memory, clock, OLD)
    await say(memory, clock, NEW, origin=Origin.PEER)
    assert (await memory.get(old)).superseded is None


async def test_an_import_out_of_order_supersedes_the_older_when_it_is_embedded(
    memory: IntakeStore, clock: FakeClock
) -> None:
    # The newer statement is stored and embedded first; the older comes later, with its own date.
    result = await memory.remember_many([NewCrystal(NEW, origin=Origin.SESSION, created_at_ms=clock.now + 10 * DAY)])
    await memory.embed_backlog()
    older = await memory.remember_many([NewCrystal(OLD, origin=Origin.SESSION, created_at_ms=clock.now)])
    await memory.embed_backlog()
    stale = await memory.get(older.ids[0])
    assert stale.superseded is not None and stale.superseded.by == result.ids[0]


async def test_a_chain_of_updates_shows_the_latest(memory: IntakeStore, clock: FakeClock) -> None:
    await say(memory, clock, "The release branch is release/2.3.")
    await say(memory, clock, "The release branch is now release/2.4.")
    latest = await say(memory, clock, "The release branch is now release/2.5.")
    hits = await search(memory, SearchRequest("Which release branch?", touch=False))
    assert hits[0].crystal.id == latest
    assert [h.crystal.text for h in hits].count("The release branch is release/2.3.") == 0


async def test_an_outdated_fact_leaves_the_working_memory(
    memory: IntakeStore, clock: FakeClock, tmp_path: Path
) -> None:
    files = WorkingMemoryFiles(tmp_path / "workspace")
    old = NewCrystal("My dentist is Dr. Hansen at Solli.", semantic_type=SemanticType.FACT, importance=0.9)
    await memory.remember(old)
    await dream(memory, files, ExtractiveSynthesizer())
    assert "Dr. Hansen at Solli" in files.memory_md.read_text()
    clock.advance(DAY)
    new = "My dentist is no longer Dr. Hansen; I switched to Dr. Berg at Majorstuen."
    await memory.remember(NewCrystal(new, semantic_type=SemanticType.FACT, importance=0.9))
    clock.advance(DAY)
    await dream(memory, files, ExtractiveSynthesizer())
    text = files.memory_md.read_text()
    assert "Dr. Berg at Majorstuen" in text and "Dr. Hansen at Solli." not in text


async def test_search_puts_a_later_hit_that_may_update_an_earlier_one_first(
    memory: IntakeStore, clock: FakeClock
) -> None:
    # Too far apart to be judged an update on save (no word of change, not a near copy), close
    # enough for search to show the later one first.
    old = await say(memory, clock, "The test suite takes 20 minutes.")
    new = await say(memory, clock, "After the caching work the test suite takes 6 minutes.")
    assert (await memory.get(old)).superseded is None
    hits = await search(memory, SearchRequest("How long does the test suite take?", touch=False, explain=True))
    ids = [h.crystal.id for h in hits]
    assert ids.index(new) < ids.index(old)
    assert hits == sorted(hits, key=lambda h: -h.score)
    moved = hits[ids.index(new)].explain
    assert moved is not None and moved.ahead_of in (old, None)
    plain = await search(
        memory, SearchRequest("How long does the test suite take?", touch=False, include_superseded=True)
    )
    assert {h.crystal.id for h in plain} == set(ids)  # only the order changed


@pytest.mark.parametrize(("answer", "expected"), [('{"outdated": 2}', "second"), ('{"outdated": 0}', None)])
async def test_the_llm_judge_decides_ambiguous_choices(
    model: FakeModelServer, answer: str, expected: str | None
) -> None:
    host, port = model.server_address[:2]
    model.answer = answer
    judge = LlmJudge(ChatEndpoint(f"http://{host!s}:{port}/v1", "test-model", timeout_s=2))
    candidates = [Candidate("first", "The sync is on Tuesdays.", 0.7), Candidate("second", "The sync is at 9.", 0.7)]
    picked = await judge.pick("The sync moved to Thursday at 10.", candidates)
    assert picked == (expected or "")
    assert "NEW: The sync moved to Thursday at 10." in model.asked[0] and "2. The sync is at 9." in model.asked[0]


async def test_a_failing_llm_judge_leaves_the_offline_choice(model: FakeModelServer) -> None:
    host, port = model.server_address[:2]
    model.answer = "the second one, I think"
    judge = LlmJudge(ChatEndpoint(f"http://{host!s}:{port}/v1", "test-model", timeout_s=2))
    assert await judge.pick("x", [Candidate("a", "y", 0.5)]) is None
