"""Typing by words and meaning (issue 28): once a crystal is embedded, the automatic type is decided
again with its vector; a caller's type and the person's correction stand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest

from ground.authority import Speaker
from memory.cognition.refine_type import refine_type
from memory.cognition.retype import retype
from memory.cognition.typing import Example
from memory.cognition.vector_typing import VectorTypingModel, mixed
from memory.embedders.base import Embedder, Vectors
from memory.graph.provenance import attribution_chain
from memory.intake.store import IntakeStore
from memory.model import EpistemicLayer, NewCrystal, SemanticType, TypeSource
from memory.setup.settings import LlmSettings, MemorySettings
from memory.setup.store import embedded_hook
from tests.memory.conftest import FakeClock

# Typed an episode by its words ("get … sorted before the trip in May"), a goal by its meaning.
PLAN = "Gotta get the visa sorted before the trip in May."


@pytest.fixture
async def node_store(tmp_path: Path, clock: FakeClock, minilm: Embedder) -> AsyncIterator[IntakeStore]:
    """A store with MiniLM and the node's own after-embedding hook."""
    hook = embedded_hook(MemorySettings(), LlmSettings())
    store = await IntakeStore.open(tmp_path / "m.db", minilm, now_ms=clock, on_embedded=hook)
    try:
        yield store
    finally:
        await store.close()


async def test_an_embedded_crystal_is_typed_again_by_its_meaning(node_store: IntakeStore) -> None:
    assert node_store.typer.guess(PLAN)[0].semantic_type is SemanticType.EPISODE  # the words alone
    crystal = (await node_store.remember(NewCrystal(PLAN))).crystal
    typed = await node_store.get(crystal.id)
    assert (typed.semantic_type, typed.type_source) == (SemanticType.GOAL, TypeSource.MODEL)
    assert typed.epistemic_layer is EpistemicLayer.EXPERIENCE
    chain = await attribution_chain(node_store, crystal.id)
    assert any(step.actor == "typer" and "episode -> goal" in (step.detail or "") for step in chain)


async def test_a_callers_type_and_a_correction_stand(node_store: IntakeStore, minilm: Embedder) -> None:
    given = (await node_store.remember(NewCrystal(PLAN, semantic_type=SemanticType.EPISODE))).crystal
    assert (await node_store.get(given.id)).semantic_type is SemanticType.EPISODE
    other = (await node_store.remember(NewCrystal("Gotta renew the passport before the trip in May."))).crystal
    await retype(
        node_store, other.id, SemanticType.EPISODE, actor="cli", speaker=Speaker.PERSON, typer=node_store.typer
    )
    vector: Vectors = minilm.embed_documents([other.text])[0]
    assert await refine_type(node_store, node_store.typer, other.id, vector) is None
    assert (await node_store.get(other.id)).semantic_type is SemanticType.EPISODE


def test_the_vector_model_learns_a_direction_and_the_mix_weighs_both() -> None:
    rng = np.random.default_rng(7)
    goals = rng.normal(size=(20, 8)) + np.array([3.0, 0, 0, 0, 0, 0, 0, 0])
    facts = rng.normal(size=(20, 8)) - np.array([3.0, 0, 0, 0, 0, 0, 0, 0])
    examples = [Example(f"g{i}", SemanticType.GOAL) for i in range(20)] + [
        Example(f"f{i}", SemanticType.FACT) for i in range(20)
    ]
    model = VectorTypingModel.fit(np.vstack([goals, facts]) / 10, examples)
    lp = model.log_probs(np.array([[0.3, 0, 0, 0, 0, 0, 0, 0], [-0.3, 0, 0, 0, 0, 0, 0, 0]]))
    assert [int(i) for i in lp.argmax(axis=1)] == [
        list(SemanticType).index(SemanticType.GOAL),
        list(SemanticType).index(SemanticType.FACT),
    ]
    words_say_fact = np.log(np.full((1, 9), 0.01))
    words_say_fact[0, list(SemanticType).index(SemanticType.FACT)] = np.log(0.92)
    (guess,) = mixed(words_say_fact, lp[:1], share=0.0)
    assert guess.semantic_type is SemanticType.FACT  # the words alone
    (guess,) = mixed(words_say_fact, lp[:1], share=1.0)
    assert guess.semantic_type is SemanticType.GOAL and 0 < guess.confidence <= 1  # the meaning alone
