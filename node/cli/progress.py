"""Progress bars on stderr (so ``--json`` output on stdout stays clean)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from click.termui import progressbar

from ground.progress import reporting


def progress_bar(length: int, label: str) -> Any:
    """A progress bar on stderr, so --json output on stdout stays clean."""
    return progressbar(length=length, label=label, file=sys.stderr, show_pos=True)


@contextmanager
def progress_bar_on_first_step(length: int, label: str) -> Iterator[None]:
    """A progress bar for a command run here on the files (``ground.progress``); it appears at
    the first step reported, so a command the daemon runs (which reports none back) shows none."""
    bars: list[Any] = []

    def step(_: str) -> None:
        if not bars:
            bars.append(progress_bar(length, label).__enter__())
        bars[0].update(1)

    token = reporting.set(step)
    try:
        yield
    finally:
        reporting.reset(token)
        if bars:
            bars[0].__exit__(None, None, None)
