"""Who asked the daemon for a change, for the audit trail and for what only the person may do: the
agent beside the node (API, MCP) or a person at the CLI or in the dashboard. The API sets it from
the token the request authenticated with (never from anything the request says), the dashboard
from its session, the control socket (0600, in the data dir beside the owner's token) from the
request; commands read it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ground.authority import Speaker
from node.errors import InvalidValue

AGENT = "agent"
CLI = "cli"
DASHBOARD = "dashboard"
ACTORS = frozenset({AGENT, CLI, DASHBOARD})
#: Who is the person: what only the person may do is refused to anyone else.
PEOPLE = frozenset({CLI, DASHBOARD})

_current: ContextVar[str] = ContextVar("bitterbot_actor", default=AGENT)


def current_actor() -> str:
    return _current.get()


def speaker_of(actor: str) -> Speaker:
    """The authority table's speaker for a caller: the person at the CLI or dashboard, else the agent."""
    return Speaker.PERSON if actor in PEOPLE else Speaker.AGENT


def current_speaker() -> Speaker:
    return speaker_of(_current.get())


@contextmanager
def acting_as(actor: str) -> Iterator[None]:
    if actor not in ACTORS:
        raise InvalidValue(f"the actor must be one of {', '.join(sorted(ACTORS))}, not {actor!r}")
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)
