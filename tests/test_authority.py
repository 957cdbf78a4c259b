"""The authority table (``ground/authority.py``) is whole, and everything asks it: every command
declares what it needs, every ingest road names its speaker, and the docs carry the table."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ground.authority import (
    CAPABILITIES,
    ROADS,
    STANDING,
    Capability,
    NotAllowed,
    Road,
    Speaker,
    may,
    may_hide,
    require,
    spend_allowance,
    table,
    weakest,
)
from node.commands.catalog import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ground", "crypto", "memory", "p2p", "marketplace", "node")


def test_every_speaker_has_a_row_and_a_standing_and_every_road_a_speaker() -> None:
    assert set(CAPABILITIES) == set(Speaker)
    assert set(STANDING) == set(Speaker)
    assert set(ROADS) == set(Road)
    assert all(capabilities <= set(Capability) for capabilities in CAPABILITIES.values())


def test_only_the_person_directs_overrides_the_person_releases_changes_scope_and_opens_the_dashboard() -> None:
    persons_alone = {
        Capability.DIRECT,
        Capability.OVERRIDE_PERSON,
        Capability.DECIDE_QUARANTINE,
        Capability.CHANGE_SCOPE,
        Capability.ERASE,
        Capability.SPEND_PAST_CEILING,
        Capability.OPEN_DASHBOARD,
        Capability.ADMINISTER,
        Capability.MANAGE_DEVICES,  # issue 51: pairing is the person's, never the agent's
    }
    for capability in persons_alone:
        assert [s for s in Speaker if may(s, capability)] == [Speaker.PERSON], capability


def test_strangers_words_can_do_nothing() -> None:
    for stranger in (Speaker.AGENT_IN_TRANSCRIPT, Speaker.FILE, Speaker.PEER, Speaker.SELLER):
        assert CAPABILITIES[stranger] == frozenset(), stranger
        assert not may_hide(stranger, Speaker.AGENT)
        assert not may_hide(stranger, Speaker.PERSON_IN_TRANSCRIPT)


def test_the_persons_words_are_hidden_by_the_person_alone() -> None:
    assert may_hide(Speaker.PERSON, Speaker.PERSON)
    assert [s for s in Speaker if may_hide(s, Speaker.PERSON)] == [Speaker.PERSON]
    assert may_hide(Speaker.PERSON_IN_TRANSCRIPT, Speaker.AGENT)
    assert not may_hide(Speaker.NODE, Speaker.AGENT)  # a dream never hides what the agent was told


def test_words_of_several_speakers_carry_the_weakest_authority() -> None:
    assert weakest([Speaker.PERSON_IN_TRANSCRIPT, Speaker.AGENT_IN_TRANSCRIPT]) is Speaker.AGENT_IN_TRANSCRIPT
    assert weakest([Speaker.PERSON, Speaker.AGENT]) is Speaker.AGENT


def test_refusals_name_what_and_who() -> None:
    with pytest.raises(NotAllowed, match=r"memory\.pin: the agent may not make a directive"):
        require(Speaker.AGENT, Capability.DIRECT, "memory.pin")
    require(Speaker.PERSON, Capability.DIRECT)


def test_the_agent_spends_within_the_ceiling_and_its_daily_budget_the_person_past_them() -> None:
    args = {"ceiling": 1_000_000, "budget": 3_000_000}
    assert spend_allowance(Speaker.AGENT, price=900_000, spent_today=0, **args) is None
    assert "ceiling" in str(spend_allowance(Speaker.AGENT, price=75_000_000, spent_today=0, **args))
    assert "daily budget" in str(spend_allowance(Speaker.AGENT, price=900_000, spent_today=2_500_000, **args))
    assert spend_allowance(Speaker.PERSON, price=75_000_000, spent_today=10**9, **args) is None
    assert spend_allowance(Speaker.PEER, price=1, spent_today=0, **args) is not None


def test_every_command_declares_what_it_needs() -> None:
    for name, command in COMMANDS.items():
        assert isinstance(command.needs, Capability), name
        # What the agent reaches over MCP, the table gives the agent.
        if command.mcp is not None:
            assert may(Speaker.AGENT, command.needs), name


def _constructions_without_a_speaker() -> list[str]:
    """Every ``NewCrystal(...)`` in the node's own code that does not say who spoke."""
    missing = []
    for package in PACKAGES:
        for file in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(file.read_text(), str(file))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "NewCrystal"
                    and not any(k.arg == "speaker" for k in node.keywords)
                ):
                    missing.append(f"{file.relative_to(ROOT)}:{node.lineno}")
    return missing


def test_every_ingest_path_names_its_speaker() -> None:
    assert _constructions_without_a_speaker() == []


def test_the_docs_carry_the_authority_table() -> None:
    assert table() in (ROOT / "docs" / "reference" / "authority.md").read_text()
