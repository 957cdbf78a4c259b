"""Who asks a memory service for a change, and what the authority table lets them change.

The node knows its caller (the token or session a request came with, ``node.actor``); memory knows
only what it is handed: the name kept in the audit trail and the authority table's speaker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ground.authority import Capability, Speaker, require
from memory.supersession.authority import is_the_persons

if TYPE_CHECKING:  # the declarations name a Caller; loading the store is for the services that run
    from memory.storage.store import MemoryStore


@dataclass(frozen=True, slots=True)
class Caller:
    """The caller of a service: ``actor`` for the audit trail ("agent", "cli", "dashboard"), and
    ``speaker`` for the authority table."""

    actor: str
    speaker: Speaker

    @property
    def is_person(self) -> bool:
        return self.speaker is Speaker.PERSON


async def refuse_unless_may_override(store: MemoryStore, crystal_id: str, doing: str, speaker: Speaker) -> None:
    """The authority table's ``OVERRIDE_PERSON``, asked for the crystal ``doing`` touches when the
    person said it (``NotAllowed``: the command's audit line names the caller). The agent can be
    talked into anything, so it never changes the person's words (``ground.authority``)."""
    if is_the_persons(await store.get(crystal_id)):
        require(speaker, Capability.OVERRIDE_PERSON, f"{crystal_id} is the person's own; {doing}")
