"""Every door of ``bench.fuzz.doors`` fuzzed at a large budget: ``python -m bench fuzz [--quick]``.

Reports, per door, the inputs run, the typed errors they got, and the crashes (the goal is 0). A
crash stops that door's run (Hypothesis shrinks it to a small input first); the input is written to
``tests/fuzz/corpus/<door>/crash-<digest>``, where the suite replays it once the parser is fixed.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings

from bench.fuzz.doors import CORPUS, Crash, Door, knock, opened_doors
from bench.fuzz.mutate import inputs

EXAMPLES, QUICK_EXAMPLES = 2_000, 150


def fuzz_door(door: Door, examples: int) -> dict[str, Any]:
    """Run ``door`` on its corpus, then on ``examples`` inputs bent from its seeds."""
    outcomes: Counter[str] = Counter()
    crashes: list[str] = []
    for data in door.seeds():
        try:
            outcomes[knock(door, data)] += 1
        except Crash as crash:
            crashes.append(f"corpus: {crash}")

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=inputs(door.seeds(), door.shape))
    def bent(data: bytes) -> None:
        outcomes[knock(door, data)] += 1

    started = time.perf_counter()
    try:
        bent()
    except Crash as crash:
        crashes.append(str(crash))
        _keep(door, crash)
    return {
        "cases": sum(outcomes.values()),
        "crashes": len(crashes),
        "crash_messages": crashes,
        "s": round(time.perf_counter() - started, 2),
        "answers": dict(outcomes.most_common(6)),
    }


def _keep(door: Door, crash: Crash) -> None:
    """The shrunk input that crashed ``door``, kept in its corpus as a regression."""
    data = getattr(crash, "data", None)
    if isinstance(data, bytes):
        folder = CORPUS / door.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"crash-{hashlib.sha256(data).hexdigest()[:12]}").write_bytes(data)


def run(quick: bool) -> dict[str, Any]:
    examples = QUICK_EXAMPLES if quick else EXAMPLES
    with opened_doors() as doors:
        per_door = {door.name: fuzz_door(door, examples) for door in doors}
    return {
        "examples_per_door": examples,
        "doors": len(per_door),
        "cases": sum(d["cases"] for d in per_door.values()),
        "crashes": sum(d["crashes"] for d in per_door.values()),
        "per_door": per_door,
    }
