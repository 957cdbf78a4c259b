"""The store's typer: gives every new crystal a semantic type, a confidence and an epistemic layer
when its caller gave none, and learns from the person's corrections.

A caller's explicit type always wins. A corrected text gets its corrected type whenever it comes
again (confidence 1); every correction is also a labelled example that the model is refitted with
(``learn``), weighted above the shipped examples, so that statements like it are typed alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import aiosqlite
import numpy as np

from ground.authority import Capability, may
from memory.cognition.llm_typer import LlmTyper
from memory.cognition.model_cache import meaning_model, shipped_model, shipped_vectors
from memory.cognition.typing import Example, Guess, TypingModel, shipped_examples
from memory.cognition.vector_typing import VectorTypingModel, mixed
from memory.epistemic import layer_for
from memory.governance.rules import classify_sensitivity
from memory.model import EpistemicLayer, NewCrystal, SemanticType, SkillVersion, TypeSource, content_hash, speaker_of
from memory.storage.store_types import Typing

#: A person's correction counts as this many shipped examples when the model is refitted.
CORRECTION_WEIGHT = 3.0
#: The newest corrections taken into a refit: bounds its cost (about 2 ms per 100 examples).
MAX_CORRECTIONS_FITTED = 5_000


class Typer:
    """Create with the stored corrections (``load_corrections``): (text, type) pairs, oldest first."""

    def __init__(self, corrections: Sequence[tuple[str, SemanticType]] = ()) -> None:
        #: Set when ``[memory] typer = "llm"``: asked first for one crystal at a time.
        self.llm: LlmTyper | None = None
        self._corrected = {content_hash(text): stype for text, stype in corrections}
        self._corrections = list(corrections)[-MAX_CORRECTIONS_FITTED:]
        self._fitted: TypingModel | None = None  # fitted at the first statement to type, not at open
        # Fitted at the first embedded crystal to refine, for one vector space (``vector_model``).
        self._vectors: tuple[str, VectorTypingModel] | None = None

    @property
    def _model(self) -> TypingModel:
        if self._fitted is None:
            self._fitted = self._fit(self._corrections) if self._corrections else shipped_model()
        return self._fitted

    @staticmethod
    def _fit(corrections: Sequence[tuple[str, SemanticType]]) -> TypingModel:
        examples = shipped_examples() + [Example(t, s, CORRECTION_WEIGHT) for t, s in corrections]
        return TypingModel.fit(examples)

    def guess(self, text: str, *, chat: bool = False) -> tuple[Guess, TypeSource]:
        """``chat``: a transcript's turn, a skill only if its words read as a procedure."""
        corrected = self._corrected.get(content_hash(text))
        if corrected is not None:
            return Guess(corrected, 1.0), TypeSource.CORRECTION
        return self._model.classify(text, chat=chat), TypeSource.MODEL

    def decide(self, new: NewCrystal) -> Typing:
        if new.semantic_type is not None:
            return _decided(new, Guess(new.semantic_type, new.type_confidence), new.type_source)
        return _decided(new, *self.guess(new.text, chat=new.voice is not None))

    @property
    def corrections(self) -> list[tuple[str, SemanticType]]:
        """The corrections the model was fitted with (a worker process fits the same model from them)."""
        return list(self._corrections)

    def classify_batch(
        self, texts: Sequence[str], untyped: Sequence[bool], chat: Sequence[bool] | None = None
    ) -> dict[str, list[Any]]:
        """What the store needs of a bulk batch that is Python work (the worker process's part):
        each text's content hash and sensitivity, and for the untyped ones their type, confidence
        and who decided it (a correction, else the model), as JSON-ready lists."""
        hashes = [content_hash(t) for t in texts]
        typed = self._typed(texts, hashes, untyped, chat or [False] * len(texts))
        return {"hashes": hashes, "sensitivity": [classify_sensitivity(t).value for t in texts], "typed": typed}

    def _typed(
        self, texts: Sequence[str], hashes: Sequence[str], untyped: Sequence[bool], chat: Sequence[bool]
    ) -> list[list[Any] | None]:
        """For each untyped text [type, confidence, source]: its correction, else the model's guess
        (the model classifies them all in one pass); None for a text its caller typed. ``chat``:
        which are a transcript's turns."""
        to_model = [i for i, (h, u) in enumerate(zip(hashes, untyped, strict=True)) if u and h not in self._corrected]
        guesses = iter(self._model.classify_many([texts[i] for i in to_model], [chat[i] for i in to_model]))
        typed: list[list[Any] | None] = []
        for chash, wanted in zip(hashes, untyped, strict=True):
            if not wanted:
                typed.append(None)
            elif chash in self._corrected:
                typed.append([self._corrected[chash].value, 1.0, TypeSource.CORRECTION.value])
            else:
                guess = next(guesses)
                typed.append([guess.semantic_type.value, guess.confidence, TypeSource.MODEL.value])
        return typed

    def decide_batch(self, items: Sequence[NewCrystal], typed: Sequence[Sequence[Any] | None]) -> list[Typing]:
        """``decide_many`` from a worker's ``classify_batch`` answer for ``items``."""
        out = []
        for new, decided in zip(items, typed, strict=True):
            if new.semantic_type is not None or decided is None:
                out.append(self.decide(new))
            else:
                stype, confidence, source = decided
                out.append(_decided(new, Guess(SemanticType(stype), float(confidence)), TypeSource(source)))
        return out

    def decide_many(self, items: Sequence[NewCrystal]) -> list[Typing]:
        """``decide`` for a batch: the untyped ones are classified in one pass. The bulk path stores
        these beside the items instead of copying each crystal (a copy costs as much as typing)."""
        untyped = [n.semantic_type is None for n in items]
        hashes = [content_hash(n.text) if u else "" for n, u in zip(items, untyped, strict=True)]
        chat = [n.voice is not None for n in items]
        return self.decide_batch(items, self._typed([n.text for n in items], hashes, untyped, chat))

    async def complete_async(self, new: NewCrystal) -> NewCrystal:
        """``complete``, asking the language model first when one is set (the offline model decides
        when it fails); a caller's type and a correction still come first."""
        if self.llm is not None and new.semantic_type is None and content_hash(new.text) not in self._corrected:
            guess = await self.llm.guess(new.text)
            if guess is not None:
                return self._completed(new, _decided(new, guess, TypeSource.LLM))
        return self.complete(new)

    def complete(self, new: NewCrystal) -> NewCrystal:
        """``new`` with its type, confidence and epistemic layer filled in where the caller left them."""
        return self._completed(new, self.decide(new))

    @staticmethod
    def _completed(new: NewCrystal, typing: Typing) -> NewCrystal:
        return replace(
            new,
            semantic_type=typing.semantic_type,
            type_confidence=typing.confidence,
            type_source=typing.source,
            epistemic_layer=typing.layer,
            skill=typing.skill,
        )

    def learn(self, text: str, semantic_type: SemanticType) -> None:
        """Take a correction: exact at once, and into the model (a refit: call it off the event loop)."""
        self._corrected[content_hash(text)] = semantic_type
        self._corrections = [*self._corrections, (text, semantic_type)][-MAX_CORRECTIONS_FITTED:]
        self._fitted = self._fit(self._corrections)
        self._vectors = None  # refitted with the correction at the next refinement

    def vector_model(self, space: str, embed: Callable[[Sequence[str]], Any]) -> VectorTypingModel:
        """The model of meaning for vectors of ``space``, fitted on the shipped examples and the
        corrections embedded with ``embed`` (the examples' vectors and the fit kept between processes)."""
        if self._vectors is None or self._vectors[0] != space:
            corrections = [Example(t, s, CORRECTION_WEIGHT) for t, s in self._corrections]
            vectors = shipped_vectors(space, embed)  # kept between processes (model_cache)
            if corrections:
                vectors = np.vstack([vectors, np.asarray(embed([e.text for e in corrections]), dtype=np.float32)])
            self._vectors = (space, meaning_model(space, vectors, shipped_examples() + corrections))
        return self._vectors[1]

    def refine(self, text: str, vector: Any, model: VectorTypingModel, *, chat: bool = False) -> Guess:
        """The type of an embedded statement, by its words and its meaning (``vector_typing.mixed``)."""
        return mixed(self._model.log_probs_many([text]), model.log_probs(vector), [text], [chat])[0]


def _decided(new: NewCrystal, guess: Guess, source: TypeSource) -> Typing:
    stype = guess.semantic_type
    skill = new.skill
    if stype is SemanticType.SKILL and skill is None:
        skill = SkillVersion(stable_skill_id=content_hash(new.text)[:16])
    speaker = speaker_of(new)
    layer = new.epistemic_layer or layer_for(new.text, stype, new.origin, speaker)
    if layer is EpistemicLayer.DIRECTIVE and not may(speaker, Capability.DIRECT):
        layer = layer_for(new.text, stype, new.origin, speaker)  # a claimed directive is only the person's
    return Typing(stype, guess.confidence, source, layer, skill)


async def load_corrections(db: aiosqlite.Connection) -> list[tuple[str, SemanticType]]:
    """Every correction kept in the ``type_corrections`` table, oldest first."""
    # The agent's corrections, kept by releases before the typer learned from the person alone, teach nothing.
    async with db.execute(
        "SELECT text, semantic_type FROM type_corrections WHERE actor != 'agent' ORDER BY corrected_ms, rowid"
    ) as cursor:
        return [(str(text), SemanticType(stype)) for text, stype in await cursor.fetchall()]
