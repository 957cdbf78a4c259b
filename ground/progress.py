"""Progress of a long command run in-process: the CLI sets a reporter, the work calls it per step.

A command run by the daemon reports nothing back (its caller waits for the answer); one run by
the local client on the files reports to whoever set ``reporting`` (the CLI's progress bar)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

Reporter = Callable[[str], None]

reporting: ContextVar[Reporter | None] = ContextVar("reporting", default=None)


def current_reporter() -> Reporter | None:
    return reporting.get()
