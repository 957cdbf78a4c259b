"""The optional language-model typer, against a local OpenAI-compatible server (a named fake of
a remote model): its answer types the crystal; any failure falls back to the offline typer."""

from __future__ import annotations

import pytest

from ground.authority import Speaker
from memory.cognition.llm_typer import LlmTyper, parse_answer
from memory.cognition.retype import retype
from memory.governance.llm import ChatEndpoint
from memory.intake.store import IntakeStore
from memory.model import NewCrystal, SemanticType, TypeSource
from tests.memory.conftest import FakeModelServer


def _attach(store: IntakeStore, server: FakeModelServer) -> None:
    host, port = server.server_address[:2]
    store.typer.llm = LlmTyper(ChatEndpoint(f"http://{host!s}:{port}/v1", "test-model", timeout_s=0.3))


async def test_the_models_answer_types_the_crystal(store: IntakeStore, model: FakeModelServer) -> None:
    _attach(store, model)
    crystal = (await store.remember(NewCrystal("Ich will den Segelschein machen"))).crystal
    assert (crystal.semantic_type, crystal.type_source, crystal.type_confidence) == (
        SemanticType.GOAL, TypeSource.LLM, 0.93,
    )  # fmt: skip
    assert model.asked == ["Ich will den Segelschein machen"]
    given = (await store.remember(NewCrystal("a fact it was told", semantic_type=SemanticType.FACT))).crystal
    assert given.type_source is TypeSource.CALLER and len(model.asked) == 1  # a caller's type: no call


@pytest.mark.parametrize("mode", ["error", "slow", "garbage"])
async def test_a_failing_model_falls_back_to_the_offline_typer(
    store: IntakeStore, model: FakeModelServer, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    _attach(store, model)
    model.mode = "ok" if mode == "garbage" else mode
    model.answer = "I think it is probably a goal?"
    crystal = (await store.remember(NewCrystal("wants to pass the Oslo sailing licence this summer"))).crystal
    assert (crystal.semantic_type, crystal.type_source) == (SemanticType.GOAL, TypeSource.MODEL)
    assert any(r.getMessage() == "llm_typer.fell_back" for r in caplog.records)


async def test_a_confidential_statement_never_reaches_the_model(store: IntakeStore, model: FakeModelServer) -> None:
    """Issue 27: with the model typer, "staging db password: ..." was sent to the chat endpoint."""
    _attach(store, model)
    crystal = (await store.remember(NewCrystal("staging db password: Tr0ub4dor&3"))).crystal
    assert model.asked == [] and crystal.type_source is not TypeSource.LLM  # typed here, offline
    assert crystal.sensitivity.value == "confidential"


async def test_a_correction_wins_over_the_model(store: IntakeStore, model: FakeModelServer) -> None:
    crystal = (await store.remember(NewCrystal("Sailing licence exam on 3 June"))).crystal
    await retype(store, crystal.id, SemanticType.EPISODE, actor="local", speaker=Speaker.PERSON, typer=store.typer)
    await store.forget(crystal.id)
    _attach(store, model)
    again = (await store.remember(NewCrystal("Sailing licence exam on 3 June"))).crystal
    assert (again.semantic_type, again.type_source) == (SemanticType.EPISODE, TypeSource.CORRECTION)
    assert model.asked == []  # a corrected text is not sent to the model


@pytest.mark.parametrize(
    ("answer", "expected"),
    [('{"type": "Skill", "confidence": 2}', (SemanticType.SKILL, 1.0)),
     ('```json\n{"type": "episode"}\n```', (SemanticType.EPISODE, 0.8))],
)  # fmt: skip
def test_answers_are_read_leniently_but_must_name_one_type(answer: str, expected: tuple[SemanticType, float]) -> None:
    guess = parse_answer(answer)
    assert (guess.semantic_type, guess.confidence) == expected
    with pytest.raises(ValueError, match="not one type"):
        parse_answer('{"type": "gossip"}')
