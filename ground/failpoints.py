"""Named places where a test may make the running node fail on purpose, as etcd's gofail and TiKV's
fail-rs do: inert unless the environment variable ``BITTERBOT_FAILPOINTS`` names them (a comma-
separated list). A real daemon's fault handling (a background loop that fails is restarted and
counted, never fatal) is then tested in a real process, without waiting for an input that still
crashes a parser: those get fixed, and a test built on one would stop testing anything."""

from __future__ import annotations

import os

from ground.errors import BitterbotError

ENV = "BITTERBOT_FAILPOINTS"


class FailpointHit(BitterbotError):
    """A failpoint named in ``BITTERBOT_FAILPOINTS`` was reached: the failure a test asked for."""


def check(name: str) -> None:
    """Raise ``FailpointHit`` when ``name`` is one of the failpoints the environment names."""
    named = os.environ.get(ENV, "")
    if named and name in (part.strip() for part in named.split(",")):
        raise FailpointHit(f"failpoint {name!r} ({ENV})")
