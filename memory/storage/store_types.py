"""The types the store's callers hand it and get back: the rows the intake admitted, link settings,
results, and the state other parts of memory keep beside it (the hormonal state, curiosity), which
the intake and search ask and the store itself never calls."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol

from pydantic import Field

from ground.settings import Section
from memory.design import RELATED_LINK_SIMILARITY, UPDATES_LINK_SIMILARITY
from memory.model import (
    Crystal,
    EpistemicLayer,
    Hormones,
    NewCrystal,
    SemanticType,
    Sensitivity,
    SkillVersion,
    TypeSource,
)

if TYPE_CHECKING:  # only named in annotations: node.config reads LinkSettings without loading numpy
    from memory.embedders.base import Vectors

Progress = Callable[[int], None]


class Typing(NamedTuple):
    """What the typer decided for one new crystal (the caller's own choices where it made them)."""

    semantic_type: SemanticType
    confidence: float
    source: TypeSource
    layer: EpistemicLayer
    skill: SkillVersion | None


@dataclass(frozen=True, slots=True)
class Admitted:
    """A new crystal as the intake admitted it (``memory.intake``): typed, its layer the one its
    speaker may have, its sensitivity classified, with the hormonal state's stamp (``influence``:
    hormones and valence; None: ``new``'s own) and curiosity's. The store writes new crystals only as
    these, and only the intake makes them (``tests/memory/test_intake.py`` reads the source to hold
    it), so no writer stores a crystal that skipped typing, classification or the authority checks."""

    new: NewCrystal
    content_hash: str
    typing: Typing
    sensitivity: Sensitivity
    influence: tuple[Hormones, float] | None = None


@dataclass(frozen=True, slots=True)
class Readmitted:
    """A crystal of this node's own signed export, as the intake lets it back in
    (``memory.intake.admit.readmit``): the row the store restores (``rows.restore_params``)."""

    crystal: Crystal


@dataclass(frozen=True, slots=True)
class Restated:
    """A text the store holds, said again by ``new``'s speaker (``row_writes.said_again``): the one
    write of a new crystal that needs no typing, made by the intake alone as ``Admitted`` is."""

    new: NewCrystal
    content_hash: str


class LinkSettings(Section):
    """Automatic graph links made when a crystal is embedded (see ``memory.graph``): a neighbour this
    similar is ``related_to`` it, this much more ``updates`` it. A store opened without an
    ``on_embedded`` hook makes none."""

    related_threshold: float = Field(default=RELATED_LINK_SIMILARITY, gt=0, le=1)
    """A new crystal more similar (cosine) than this to an existing one is linked "related_to" it ...
    (the design's numbers, memory/design.py)
    """
    updates_threshold: float = Field(default=UPDATES_LINK_SIMILARITY, gt=0, le=1)
    """... and more similar than this, "updates" it. Linking never deletes or hides anything."""
    #: How many nearest neighbours of a new crystal linking and supersession look at.
    neighbours: ClassVar[int] = 5


class HormoneSource(Protocol):
    """The hormonal state, as the store and search use it (``memory.dynamics.endocrine.Endocrine``)."""

    def levels(self) -> Hormones: ...

    def influences(self, items: Sequence[NewCrystal]) -> list[tuple[Hormones, float]]: ...

    async def on_ingest(self, new: NewCrystal) -> NewCrystal: ...


@dataclass(frozen=True, slots=True)
class Remembered:
    crystal: Crystal
    created: bool  # False: the same text was already stored (dedup)


@dataclass(frozen=True, slots=True)
class BulkResult:
    created: int
    duplicates: int
    ids: tuple[str, ...]  # in input order; a duplicate maps to the existing crystal


class CuriositySource(Protocol):
    """Curiosity, as the store and search use it (``memory.cognition.curiosity.Curiosity``)."""

    async def assess(self, new: NewCrystal, vector: Vectors | None) -> NewCrystal: ...

    async def on_stored(self, stored: Sequence[tuple[str, str]]) -> int: ...

    async def record_gap(self, query: str) -> object: ...

    async def gap_lines(self, limit: int) -> list[str]: ...
