"""Who asked the daemon for a change, for the audit trail: the agent beside the node (API, MCP)
or a person at the CLI or in the dashboard. The API and the control socket set it per request;
commands read it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

AGENT = "agent"
CLI = "cli"
DASHBOARD = "dashboard"
ACTORS = frozenset({AGENT, CLI, DASHBOARD})
HEADER = "X-Bitterbot-Actor"

_current: ContextVar[str] = ContextVar("bitterbot_actor", default=AGENT)


def current_actor() -> str:
    return _current.get()


@contextmanager
def acting_as(actor: str) -> Iterator[None]:
    if actor not in ACTORS:
        raise ValueError(f"{HEADER} must be one of {', '.join(sorted(ACTORS))}, not {actor!r}")
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)
