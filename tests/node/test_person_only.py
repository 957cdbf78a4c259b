"""Issue 27: what widens what reaches the agent's prompt is the person's alone. The agent approved
held content itself (MCP and the API with its own token), whatever reached the daemon."""

from __future__ import annotations

import pytest

from ground.authority import NotAllowed
from node.actor import AGENT, CLI, DASHBOARD, acting_as
from node.commands.catalog import COMMANDS

PERSON_ONLY = sorted(name for name, command in COMMANDS.items() if command.person_only)


def test_releasing_and_rejecting_held_content_are_the_persons() -> None:
    assert {"memory.quarantine.approve", "memory.quarantine.reject"} <= set(PERSON_ONLY)


def test_the_dashboard_pinning_publishing_and_judging_are_the_persons() -> None:
    """Issue 47: the agent's token got a dashboard login link, and through it acted as the person."""
    assert {"ui.login", "memory.pin", "skills.publish", "skills.arbitrate", "weather.broadcast"} <= set(PERSON_ONLY)


class NoHost:
    """Stands where a part's host would be: a command refused before it runs never touches it."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the command ran ({name}) for someone who may not run it")


@pytest.mark.parametrize("name", PERSON_ONLY)
async def test_the_agent_is_refused_every_person_only_command(name: str) -> None:
    with acting_as(AGENT), pytest.raises(NotAllowed, match="only the person decides this"):
        await COMMANDS[name].run(NoHost(), {"id": "held-crystal"})


@pytest.mark.parametrize("actor", [CLI, DASHBOARD])
async def test_the_person_passes_the_gate(actor: str) -> None:
    with acting_as(actor), pytest.raises(AssertionError, match="the command ran"):
        await COMMANDS["memory.quarantine.approve"].run(NoHost(), {"id": "held-crystal"})
