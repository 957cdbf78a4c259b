"""Admission: a new crystal, once its typing, hormones and curiosity are decided, becomes the row the
store writes (``Admitted``), its sensitivity classified on the way. Plain functions over plain data.

The authority checks ride here too: the layer each speaker may have is the typer's decision
(``memory.epistemic.layer_for`` with ``ground.authority``: only a directing speaker makes a
directive), a pin is only a directing speaker's (``NewCrystal``), and a text said again is taken on
by a speaker that stands higher (``memory.storage.row_writes.said_again``). An ``Admitted`` row is
made here and nowhere else, so no writer reaches the store around them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from memory.errors import InvalidValue
from memory.model import Crystal, Hormones, NewCrystal, Sensitivity
from memory.sensitivity import classify_sensitivity, stricter
from memory.storage.store_types import Admitted, Readmitted, Restated, Typing


def restated(new: NewCrystal, content_hash: str) -> Restated:
    """``new``, whose text the store holds already: said again, with nothing to decide."""
    return Restated(new, content_hash)


def admit(new: NewCrystal, content_hash: str) -> Admitted:
    """The row of one crystal the typer completed (``Typer.complete_async``), classified."""
    if new.semantic_type is None or new.epistemic_layer is None:
        raise InvalidValue("a crystal is typed before it is admitted")
    typing = Typing(new.semantic_type, new.type_confidence, new.type_source, new.epistemic_layer, new.skill)
    return Admitted(new, content_hash, typing, new.sensitivity or classify_sensitivity(new.text))


def admit_batch(
    items: Sequence[NewCrystal],
    hashes: Sequence[str],
    typings: Sequence[Typing],
    influences: Sequence[tuple[Hormones, float]] | None = None,
    sensitivities: Sequence[Sensitivity] | None = None,
) -> list[Admitted]:
    """The rows of a batch, with its typings (``Typer.decide_many``) and hormonal influences beside
    the items rather than copied into each (a copy costs as much as typing); ``sensitivities`` when a
    worker process classified them already (``memory.cognition.bulk_typing``)."""
    return [
        Admitted(
            new,
            chash,
            typing,
            new.sensitivity or (sensitivities[i] if sensitivities is not None else classify_sensitivity(new.text)),
            influences[i] if influences is not None else None,
        )
        for i, (new, chash, typing) in enumerate(zip(items, hashes, typings, strict=True))
    ]


def readmit(crystal: Crystal) -> Readmitted:
    """A crystal of this node's own signed export, as it goes back in (``memory.transfer.restore``):
    current for now (the restore sets its supersession once both ends are in), and never less
    private than this node's own rules call its text. The file's word is taken for everything else,
    but a secret the file calls "normal" would reach MEMORY.md and the remote endpoints, which
    confidential text never does."""
    return Readmitted(replace(crystal, superseded=None, sensitivity=stricter(crystal.sensitivity, crystal.text)))
