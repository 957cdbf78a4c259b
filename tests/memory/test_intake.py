"""The intake apart from the store (issue 50): a new crystal reaches the store only as a row the
intake admitted, and the store decides nothing about it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, cast

import pytest

from memory.embedders.hashing import HashingEmbedder
from memory.errors import InvalidValue, StoreError
from memory.intake.admit import admit
from memory.intake.store import IntakeStore
from memory.model import EpistemicLayer, NewCrystal, SemanticType, Sensitivity, content_hash
from memory.storage.store import MemoryStore
from tests.test_import_cycles import _graph

ROOT = Path(__file__).resolve().parents[2]
ROWS = {"Admitted", "Readmitted", "Restated"}


def _made_where() -> set[str]:
    """The files that construct a row the store writes (``ROWS``), by reading every source file."""
    found = set()
    for package in ("ground", "crypto", "memory", "p2p", "marketplace", "node", "bench"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call):
                    name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                    if name in ROWS:
                        found.add(str(path.relative_to(ROOT)))
    return found


def test_only_the_intake_makes_the_rows_the_store_writes() -> None:
    assert _made_where() == {"memory/intake/admit.py"}


def test_the_store_imports_nothing_that_decides_a_crystal() -> None:
    _, graph = _graph()
    deciding = ("memory.cognition", "memory.governance", "memory.intake", "memory.dynamics")
    reached = sorted(
        f"{name} -> {target}"
        for name, targets in graph.items()
        if name.startswith("memory.storage")
        for target in targets
        if target.startswith(deciding)
    )
    assert reached == []


async def test_the_store_refuses_a_crystal_the_intake_did_not_admit(tmp_path: Path) -> None:
    store = await MemoryStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        bare = cast(Any, NewCrystal("my PIN is 4921", semantic_type=SemanticType.FACT))
        with pytest.raises(StoreError, match="the intake admitted"):
            await store.write(bare)
        with pytest.raises(StoreError, match="the intake admitted"):
            await store.write_many([bare])
        assert (await store.stats())["total"] == 0  # nothing was written
    finally:
        await store.close()


def test_admission_classifies_and_refuses_an_untyped_crystal() -> None:
    text = "the staging db password is hunter2"
    with pytest.raises(InvalidValue, match="typed before"):
        admit(NewCrystal(text), content_hash(text))
    typed = NewCrystal(text, semantic_type=SemanticType.FACT, epistemic_layer=EpistemicLayer.WORLD_FACT)
    row = admit(typed, content_hash(text))
    assert row.sensitivity is Sensitivity.CONFIDENTIAL
    assert row.typing.semantic_type is SemanticType.FACT and row.typing.layer is EpistemicLayer.WORLD_FACT


async def test_remembering_goes_through_the_intake_to_the_row(tmp_path: Path) -> None:
    store = await IntakeStore.open(tmp_path / "m.db", HashingEmbedder())
    try:
        made = await store.remember(NewCrystal("Always answer me in French, please."))
        assert made.created and made.crystal.epistemic_layer is EpistemicLayer.DIRECTIVE  # typed at intake
        again = await store.remember(NewCrystal("Always answer me in French, please.", actor="agent"))
        assert not again.created and again.crystal.id == made.crystal.id
    finally:
        await store.close()
