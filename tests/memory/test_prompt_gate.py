"""Issue 27: one gate to the agent's prompt. Every route, every origin, held or not, confidential or
not, instruction-like or not: what the gate lets through, and that the docs carry its table."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ground.authority import Capability, Speaker, may
from memory.governance.prompt_gate import PROMPT_ROUTES, Passage, Route, decide, table

COMBINATIONS = list(itertools.product(Route, Speaker, (False, True), (False, True), (False, True)))


@pytest.mark.parametrize(("route", "speaker", "held", "confidential", "instructions"), COMBINATIONS)
def test_every_route_for_every_speaker(
    route: Route, speaker: Speaker, held: bool, confidential: bool, instructions: bool
) -> None:
    passage = decide(route, speaker=speaker, held=held, confidential=confidential, instructions=instructions)
    if held:  # waits for the person: nowhere but a search that asks for it, marked
        assert passage is (Passage.MARKED if route is Route.SEARCH_RESULT else Passage.NEVER)
    if confidential and route is not Route.SEARCH_RESULT:  # never verbatim into a prompt or off the node
        assert passage in (Passage.NEVER, Passage.STAND_IN, Passage.REDACTED)
    if confidential and route is Route.LLM_ENDPOINT:
        assert passage is Passage.NEVER
    if not may(speaker, Capability.PROMPT_UNMARKED) and route in PROMPT_ROUTES:
        assert passage is not Passage.AS_IS  # a peer's, a file's, a quoted page's words are never unmarked
    if instructions and not may(speaker, Capability.DIRECT) and route in PROMPT_ROUTES:
        assert passage is not Passage.AS_IS  # an order in the prompt is the person's alone
    if route is Route.CURIOSITY_GAP and instructions:
        assert passage is Passage.NEVER
    if not (held or confidential or instructions) and may(speaker, Capability.PROMPT_UNMARKED):
        assert passage is Passage.AS_IS  # the person's and the agent's own text goes everywhere


def test_the_docs_carry_the_gate_table() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "authority.md").read_text()
    assert table() in page
