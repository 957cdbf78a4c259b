"""Automatic typing at ingest, the epistemic layers, and learning from ``memory retype`` (issue 16)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ground.authority import Speaker
from memory.cognition.model_cache import shipped_model
from memory.cognition.procedure import reads_as_procedure
from memory.cognition.retype import retype
from memory.cognition.typer import Typer
from memory.cognition.typing import TypingModel, features, read_examples, shipped_examples
from memory.embedders.base import Embedder
from memory.embedders.hashing import HashingEmbedder
from memory.epistemic import layer_for
from memory.intake.store import IntakeStore
from memory.model import KNOWLEDGE_TYPES, EpistemicLayer, NewCrystal, Origin, SemanticType, TypeSource
from memory.setup.settings import LlmSettings, MemorySettings
from memory.setup.store import embedded_hook
from tests.memory.conftest import FakeClock

DEV_SET = Path(__file__).resolve().parents[2] / "bench" / "data" / "typing_dev.jsonl"


async def test_untyped_memories_get_a_type_a_confidence_and_a_layer(
    tmp_path: Path, clock: FakeClock, minilm: Embedder
) -> None:
    # The issue's own examples; none of them is among the statements the typer is fitted on. Typed
    # as the node types them: by words when stored, by words and meaning once embedded (the words
    # alone now read "moved … last year" as an episode).
    hook = embedded_hook(MemorySettings(), LlmSettings())
    store = await IntakeStore.open(tmp_path / "t.db", minilm, now_ms=clock, on_embedded=hook)
    try:
        await _typed_as_the_issue_says(store)
    finally:
        await store.close()


async def _typed_as_the_issue_says(store: IntakeStore) -> None:
    expected = {
        "My brother Tomas moved to Tallinn last year": SemanticType.RELATIONSHIP,
        "answers in Norwegian when I write in Norwegian": SemanticType.PREFERENCE,
        "wants to pass the Oslo sailing licence this summer": SemanticType.GOAL,
    }
    shipped = {e.text.rstrip(".") for e in shipped_examples()}
    for text, stype in expected.items():
        assert text not in shipped
        crystal = await store.get((await store.remember(NewCrystal(text))).crystal.id)
        assert crystal.semantic_type is stype, text
        assert crystal.type_source is TypeSource.MODEL
        assert 1 / len(SemanticType) < crystal.type_confidence <= 1
    preference = (await store.remember(NewCrystal("answers in Norwegian when I write in Norwegian"))).crystal
    assert preference.epistemic_layer is EpistemicLayer.DIRECTIVE


async def test_a_callers_type_always_wins(store: IntakeStore) -> None:
    crystal = (await store.remember(NewCrystal("wants to learn Finnish", semantic_type=SemanticType.FACT))).crystal
    assert crystal.semantic_type is SemanticType.FACT
    assert crystal.type_source is TypeSource.CALLER and crystal.type_confidence == 1.0


async def test_a_bulk_import_types_like_one_at_a_time(store: IntakeStore, tmp_path: Path) -> None:
    texts = [e.text for e in read_examples(DEV_SET.read_text().splitlines())[::7]]
    result = await store.remember_many([NewCrystal(t) for t in texts], batch_size=8)
    bulk = [await store.get(i) for i in result.ids]
    model = shipped_model()
    for text, crystal in zip(texts, bulk, strict=True):
        one = model.classify(text)
        assert crystal.semantic_type is one.semantic_type
        assert abs(crystal.type_confidence - one.confidence) < 1e-9


def test_the_shipped_typer_reaches_the_goal_on_the_development_set_it_was_not_fitted_on() -> None:
    dev = read_examples(DEV_SET.read_text().splitlines())
    shipped = {e.text for e in shipped_examples()}
    assert len(dev) >= 200 and not shipped & {e.text for e in dev}
    assert {e.semantic_type for e in dev} == set(SemanticType)
    guesses = shipped_model().classify_many([e.text for e in dev])
    right = sum(g.semantic_type is e.semantic_type for g, e in zip(guesses, dev, strict=True))
    assert right / len(dev) >= 0.85


def test_long_texts_are_typed_from_their_start_at_a_bounded_cost() -> None:
    long = "To rebuild the index, stop the service and run reindex. " + "filler words " * 50_000
    assert len(features(long)) == len(features(long[:5_000]))
    assert shipped_model().classify(long).semantic_type is SemanticType.SKILL


def test_only_the_person_can_direct_the_agent() -> None:
    instruction = "Always answer in Spanish"
    assert layer_for(instruction, SemanticType.GENERAL, Origin.USER_INPUT, Speaker.PERSON) is EpistemicLayer.DIRECTIVE
    # The agent can be talked into anything, and a captured turn is only as sure as who handed it over.
    for speaker in (Speaker.AGENT, Speaker.PERSON_IN_TRANSCRIPT, Speaker.AGENT_IN_TRANSCRIPT):
        assert layer_for(instruction, SemanticType.PREFERENCE, Origin.SESSION, speaker) is EpistemicLayer.WORLD_FACT
        assert layer_for(instruction, SemanticType.GENERAL, Origin.SESSION, speaker) is EpistemicLayer.EXPERIENCE
    # A peer's or an indexed file's text never directs, however it is phrased or typed.
    assert layer_for(instruction, SemanticType.PREFERENCE, Origin.PEER, Speaker.PEER) is EpistemicLayer.WORLD_FACT
    assert layer_for(instruction, SemanticType.GENERAL, Origin.PEER, Speaker.PEER) is EpistemicLayer.EXPERIENCE
    assert layer_for(instruction, SemanticType.SKILL, Origin.INDEXED, Speaker.FILE) is EpistemicLayer.WORLD_FACT
    assert (
        layer_for("They prefer short replies", SemanticType.INSIGHT, Origin.DREAM, Speaker.NODE)
        is EpistemicLayer.MENTAL_MODEL
    )
    assert (
        layer_for("Tomas lives in Riga", SemanticType.FACT, Origin.USER_INPUT, Speaker.PERSON)
        is EpistemicLayer.WORLD_FACT
    )
    assert (
        layer_for("We sailed to Ærø", SemanticType.EPISODE, Origin.SESSION, Speaker.AGENT) is EpistemicLayer.EXPERIENCE
    )
    assert layer_for("Deploys fail after config edits", SemanticType.INSIGHT, Origin.USER_INPUT, Speaker.PERSON) is (
        EpistemicLayer.MENTAL_MODEL
    )


async def test_retype_corrects_the_crystal_keeps_the_example_and_the_typer_learns(
    store: IntakeStore, tmp_path: Path
) -> None:
    # Statements of a kind the shipped examples do not cover: measurements the person logs.
    readings = [
        "Blood pressure 128/84 at the pharmacy",
        "Resting pulse 61 this week",
        "Blood sugar 5.9 mmol/L before breakfast",
        "Weight 81.4 kg on the bathroom scale",
    ]
    unseen = "Cholesterol 4.8 mmol/L at the annual check"
    assert shipped_model().classify(unseen).semantic_type is not SemanticType.EPISODE
    for text in readings:
        crystal = (await store.remember(NewCrystal(text))).crystal
        fixed = await retype(
            store, crystal.id, SemanticType.EPISODE, actor="local", speaker=Speaker.PERSON, typer=store.typer
        )
        assert fixed.semantic_type is SemanticType.EPISODE and fixed.type_source is TypeSource.CORRECTION
        assert fixed.epistemic_layer is EpistemicLayer.EXPERIENCE and fixed.type_confidence == 1.0
    learned = (await store.remember(NewCrystal(unseen))).crystal
    assert learned.semantic_type is SemanticType.EPISODE and learned.type_source is TypeSource.MODEL

    # The corrections are kept: a store opened again on the file types alike, and a corrected text
    # that comes again gets its corrected type outright.
    path = store.path
    await store.close()
    reopened = await IntakeStore.open(path, HashingEmbedder())
    try:
        assert reopened.typer.guess(readings[0])[1] is TypeSource.CORRECTION
        again = await reopened.remember_many([NewCrystal(readings[1] + " (again)"), NewCrystal(unseen + ".")])
        assert [(await reopened.get(i)).semantic_type for i in again.ids] == [SemanticType.EPISODE] * 2
        async with reopened.reader().execute("SELECT count(*) FROM type_corrections") as cursor:
            assert await cursor.fetchone() == (len(readings),)
        async with reopened.reader().execute(
            "SELECT detail FROM attributions WHERE action = 'retyped' ORDER BY seq"
        ) as cursor:
            assert [r[0].endswith("-> episode") for r in await cursor.fetchall()] == [True] * len(readings)
    finally:
        await reopened.close()


def test_fitting_is_deterministic() -> None:
    examples = shipped_examples()[::3]
    a, b = TypingModel.fit(examples), TypingModel.fit(examples)
    texts = [e.text for e in shipped_examples()[1::3]]
    assert a.classify_many(texts) == b.classify_many(texts)


async def test_a_large_import_is_typed_in_a_worker_process_exactly_as_here(
    store: IntakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("memory.intake.store.WORKER_MIN_ITEMS", 10)  # the worker for a small import
    real, started = asyncio.create_subprocess_exec, []

    async def counted(*args: Any, **kwargs: Any) -> Any:
        started.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr("memory.cognition.bulk_typing.asyncio.create_subprocess_exec", counted)
    dev = read_examples(DEV_SET.read_text().splitlines())[:60]
    store.typer = Typer([(dev[0].text, SemanticType.GENERAL)])  # as a store with that correction opens
    given = NewCrystal(dev[1].text, semantic_type=SemanticType.SKILL)
    items = [NewCrystal(e.text) for e in dev[2:]] + [NewCrystal(dev[0].text), given]
    result = await store.remember_many(items, batch_size=8)
    stored = [await store.get(i) for i in result.ids]
    here = store.typer.decide_many([NewCrystal(e.text) for e in dev[2:]])  # the same typer, in this process
    assert [(c.semantic_type, round(c.type_confidence, 9)) for c in stored[:-2]] == [
        (t.semantic_type, round(t.confidence, 9)) for t in here
    ]
    assert {c.type_source for c in stored[:-2]} == {TypeSource.MODEL}
    assert (stored[-2].semantic_type, stored[-2].type_source) == (SemanticType.GENERAL, TypeSource.CORRECTION)
    assert (stored[-1].semantic_type, stored[-1].type_source) == (SemanticType.SKILL, TypeSource.CALLER)
    assert [a[1:] for a in started] == [("-m", "memory.cognition.typing_worker")]  # one worker, for the import


@pytest.mark.parametrize("worker", ["dies after starting", "cannot start"])
async def test_a_worker_that_dies_or_cannot_start_loses_nothing(
    store: IntakeStore, monkeypatch: pytest.MonkeyPatch, worker: str
) -> None:
    import sys

    monkeypatch.setattr("memory.intake.store.WORKER_MIN_ITEMS", 10)
    if worker == "cannot start":
        monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    else:  # a real process that reads the corrections and exits without answering
        real = asyncio.create_subprocess_exec

        async def dying(*args: Any, **kwargs: Any) -> Any:
            return await real(sys.executable, "-c", "import sys; sys.stdin.readline()", **kwargs)

        monkeypatch.setattr("memory.cognition.bulk_typing.asyncio.create_subprocess_exec", dying)
    texts = [e.text for e in read_examples(DEV_SET.read_text().splitlines())[:40]]
    result = await store.remember_many([NewCrystal(t) for t in texts], batch_size=8)
    assert result.created == len(texts)
    here = shipped_model().classify_many(texts)
    assert [(await store.get(i)).semantic_type for i in result.ids] == [g.semantic_type for g in here]


# Captured pieces of conversations_apart_dev that the typer called skills (issue 52): a chat line is
# typed by what it is, and a skill or task pattern needs words that read as a procedure.
CHAT_TYPED_AS_SKILLS = (
    "Tomasz: go\nAdaeze: Marco's out. his restaurant opening got pushed to the end of May and he's head chef so "
    "he can't leave",
    "Adaeze: she'll feed him pastries for 4 days, he'll come back round\nTomasz: he's already round",
    "Adaeze: I'm going to say maybe and then back out on the day\nTomasz: that's the Ada I know",
)


@pytest.mark.parametrize("text", CHAT_TYPED_AS_SKILLS)
def test_a_chat_line_is_never_a_skill_for_its_topic(text: str) -> None:
    assert not reads_as_procedure(text)
    said = NewCrystal(text, origin=Origin.SESSION, voice=text.partition(":")[0])  # a transcript's turn
    assert Typer().decide(said).semantic_type not in KNOWLEDGE_TYPES


@pytest.mark.parametrize(
    "text",
    [
        "How to roll back a migration: alembic downgrade -1, then fix the script and upgrade again.",
        "ok so to reset it you hold the button for like 10 sec",
        "If the printer jams, open the back panel and pull the sheet out slowly.",
        "Waters the plants every Sunday evening.",
        "1. stop the service\n2. copy the data dir\n3. start it again",
    ],
)
def test_procedures_and_routines_read_as_procedures(text: str) -> None:
    assert reads_as_procedure(text)


@pytest.mark.parametrize(
    "text",
    ["My payday is the 15th", "I love baking sourdough on weekends", "the deploy failed last night, ugh",
     "Caroline: my sister is a nurse in Porto", "Python 3.12 is what we use at work"],
)  # fmt: skip
def test_statements_about_skill_like_topics_do_not(text: str) -> None:
    assert not reads_as_procedure(text)
