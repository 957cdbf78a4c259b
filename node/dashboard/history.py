"""What the dashboard's charts draw: the node's counters sampled once a minute, the last 24 hours.

Pure bookkeeping over samples the dashboard takes from the node's status. It lives in the
daemon's memory, so a restart starts it afresh; a sample costs a few hundred bytes and the
ring holds at most ``capacity`` of them.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from node.dashboard.charts import Series

SAMPLE_EVERY_S = 60.0
CAPACITY = 24 * 60  # a day of minutes
ACCEPTED = "accepted"


@dataclass(frozen=True, slots=True)
class Sample:
    at_ms: int
    hormones: Mapping[str, float] = field(default_factory=dict)
    messages: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # topic -> verdict -> count so far
    peers_connected: int = 0


def _mapping(doc: object, key: str) -> Mapping[str, Any]:
    value = doc.get(key) if isinstance(doc, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def part_details(status: Mapping[str, Any], part: str) -> Mapping[str, Any]:
    """What the ``status`` command's answer says of one part: empty for a part that is off."""
    return _mapping(_mapping(status, "details"), part)


def sample_of(status: Mapping[str, Any], at_ms: int) -> Sample:
    """A sample from the ``status`` command's answer (a part that is off gives nothing)."""
    memory, p2p = part_details(status, "memory"), part_details(status, "p2p")
    return Sample(
        at_ms,
        {name: float(level) for name, level in _mapping(memory, "hormones").items()},
        {topic: dict(verdicts) for topic, verdicts in _mapping(p2p, "messages").items()},
        int(_mapping(p2p, "peers").get("connected") or 0),
    )


class History:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._samples: deque[Sample] = deque(maxlen=capacity)

    def add(self, sample: Sample) -> None:
        self._samples.append(sample)

    def __len__(self) -> int:
        return len(self._samples)

    def span_ms(self) -> tuple[int, int] | None:
        return (self._samples[0].at_ms, self._samples[-1].at_ms) if self._samples else None

    def hormones(self) -> list[Series]:
        names = sorted({name for s in self._samples for name in s.hormones})
        return [
            Series(name, [(s.at_ms, s.hormones[name]) for s in self._samples if name in s.hormones]) for name in names
        ]

    def verdicts(self) -> list[Series]:
        """Per topic, messages accepted and refused in each interval between two samples."""
        out: dict[str, list[tuple[float, float]]] = {}
        pairs = list(itertools.pairwise(self._samples))
        topics = sorted({t for s in self._samples for t in s.messages})
        for topic in topics:
            for kind in (ACCEPTED, "refused"):
                out[f"{topic} {kind}"] = []
            for before, after in pairs:
                was, now = before.messages.get(topic, {}), after.messages.get(topic, {})
                delta = {v: now.get(v, 0) - was.get(v, 0) for v in now}
                accepted = max(delta.get(ACCEPTED, 0), 0)
                refused = sum(max(d, 0) for v, d in delta.items() if v != ACCEPTED)
                out[f"{topic} accepted"].append((after.at_ms, accepted))
                out[f"{topic} refused"].append((after.at_ms, refused))
        return [Series(name, points) for name, points in out.items() if points]
