"""The types the store's callers hand it and get back: link settings, results, and the hooks other
parts of memory attach to it (the hormonal state, curiosity, the graph) without the store
importing them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from pydantic import Field

from ground.settings import Section
from memory.design import RELATED_LINK_SIMILARITY, UPDATES_LINK_SIMILARITY
from memory.model import Crystal, Hormones, NewCrystal

if TYPE_CHECKING:  # only named in annotations: node.config reads LinkSettings without loading numpy
    from memory.embedders.base import Vectors

Progress = Callable[[int], None]


class LinkSettings(Section):
    """Automatic graph links made when a crystal is embedded (see ``memory.graph``): a neighbour this
    similar is ``related_to`` it, this much more ``updates`` it. A store opened without an
    ``on_embedded`` hook makes none."""

    related_threshold: float = Field(default=RELATED_LINK_SIMILARITY, gt=0, le=1)
    updates_threshold: float = Field(default=UPDATES_LINK_SIMILARITY, gt=0, le=1)
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
