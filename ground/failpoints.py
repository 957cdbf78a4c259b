"""Named places where a test may make the running node fail on purpose, as etcd's gofail and TiKV's
fail-rs do: inert unless the environment variable ``BITTERBOT_FAILPOINTS`` names them (a comma-
separated list). A real daemon's fault handling (a background loop that fails is restarted and
counted, never fatal) is then tested in a real process, without waiting for an input that still
crashes a parser: those get fixed, and a test built on one would stop testing anything.

Each entry is ``name`` (fail every time it is reached), ``name=N`` (fail the first N times, then
pass: the work a failure interrupted is retried) or ``name=kill`` (the process kills itself with
SIGKILL there, as ``kill -9`` would at that moment)."""

from __future__ import annotations

import os
import signal

from ground.errors import BitterbotError

ENV = "BITTERBOT_FAILPOINTS"
#: How often each failpoint with a count has failed in this process.
_hits: dict[str, int] = {}


class FailpointHit(BitterbotError):
    """A failpoint named in ``BITTERBOT_FAILPOINTS`` was reached: the failure a test asked for."""


def _action(name: str) -> str | None:
    """What the environment asks of the failpoint ``name`` ('' for always), or None when nothing."""
    named = os.environ.get(ENV, "")
    if not named:
        return None
    for part in named.split(","):
        key, _, action = part.strip().partition("=")
        if key == name:
            return action
    return None


def check(name: str) -> None:
    """Raise ``FailpointHit`` (or kill the process) when the environment names ``name``."""
    action = _action(name)
    if action is None:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if action.isdigit():
        if _hits.get(name, 0) >= int(action):
            return
        _hits[name] = _hits.get(name, 0) + 1
    raise FailpointHit(f"failpoint {name!r} ({ENV})")
