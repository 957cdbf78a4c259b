"""Every door of ``bench.fuzz.doors`` fuzzed at a large budget: ``python -m bench fuzz [--quick]``.

Reports, per door, the inputs run, the typed errors they got, the most memory one input took
(``tracemalloc``: past ``MAX_ALLOC_MB`` is a crash, an allocation the input's size did not bound),
and the crashes (the goal is 0). A crash stops that door's run (Hypothesis shrinks it to a small
input first); the input is written to ``tests/fuzz/corpus/<door>/crash-<digest>``, where the suite
replays it once the parser is fixed.
"""

from __future__ import annotations

import hashlib
import time
import tracemalloc
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings

from bench.fuzz.doors import CORPUS, Crash, Door, knock, opened_doors
from bench.fuzz.mutate import inputs

EXAMPLES, QUICK_EXAMPLES = 2_000, 100
MAX_ALLOC_MB = 256  # inputs are at most a few MB: more than this was allocated for something else


def fuzz_door(door: Door, examples: int) -> dict[str, Any]:
    """Run ``door`` on its corpus, then on ``examples`` inputs bent from its seeds."""
    outcomes: Counter[str] = Counter()
    crashes: list[str] = []
    peak = [0]

    def measured(data: bytes) -> None:
        tracemalloc.reset_peak()
        outcomes[knock(door, data)] += 1
        used = tracemalloc.get_traced_memory()[1]
        peak[0] = max(peak[0], used)
        if used > MAX_ALLOC_MB * 2**20:
            raise Crash(f"{door.name}: allocated {used / 2**20:.0f} MB on {len(data)} bytes: {data[:120]!r}", data)

    for data in door.seeds():
        try:
            measured(data)
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
        measured(data)

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
        "peak_mb": round(peak[0] / 2**20, 1),
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
    tracemalloc.start()
    try:
        with opened_doors() as doors:
            per_door = {door.name: fuzz_door(door, examples) for door in doors}
    finally:
        tracemalloc.stop()
    return {
        "examples_per_door": examples,
        "doors": len(per_door),
        "cases": sum(d["cases"] for d in per_door.values()),
        "crashes": sum(d["crashes"] for d in per_door.values()),
        "per_door": per_door,
    }
