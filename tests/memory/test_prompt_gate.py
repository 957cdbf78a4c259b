"""Issue 27: one gate to the agent's prompt. Every route, every origin, held or not, confidential or
not, instruction-like or not: what the gate lets through, and that the README carries its table."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from memory.governance.prompt_gate import PROMPT_ROUTES, Passage, Route, decide, table
from memory.model import Origin

COMBINATIONS = list(itertools.product(Route, Origin, (False, True), (False, True), (False, True)))


@pytest.mark.parametrize(("route", "origin", "held", "confidential", "instructions"), COMBINATIONS)
def test_every_route_for_every_origin(
    route: Route, origin: Origin, held: bool, confidential: bool, instructions: bool
) -> None:
    passage = decide(route, origin=origin, held=held, confidential=confidential, instructions=instructions)
    if held:  # waits for the person: nowhere but a search that asks for it, marked
        assert passage is (Passage.MARKED if route is Route.SEARCH_RESULT else Passage.NEVER)
    if confidential and route is not Route.SEARCH_RESULT:  # never verbatim into a prompt or off the node
        assert passage in (Passage.NEVER, Passage.STAND_IN, Passage.REDACTED)
    if confidential and route is Route.LLM_ENDPOINT:
        assert passage is Passage.NEVER
    if origin is Origin.PEER and route in PROMPT_ROUTES:  # another node's words are never unmarked
        assert passage is not Passage.AS_IS
    if route is Route.CURIOSITY_GAP and instructions:
        assert passage is Passage.NEVER
    if not (held or confidential or instructions) and origin is not Origin.PEER:
        assert passage is Passage.AS_IS  # the person's and the agent's own text goes everywhere


def test_the_readme_carries_the_gate_table() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert table() in readme
