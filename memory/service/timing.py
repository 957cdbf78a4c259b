"""Where the memory services' durations are observed. The node hands its Prometheus histograms
(``node.parts.metrics.NodeMetrics``) down; memory names only what it calls of them, so a service
times its own work and never imports the node's metrics."""

from __future__ import annotations

from typing import Protocol


class Durations(Protocol):
    """Takes each duration, in seconds (a Prometheus histogram)."""

    def observe(self, amount: float) -> None: ...


class DurationsByMode(Protocol):
    """Takes each duration under a label, the search mode (a Prometheus histogram with one label)."""

    def labels(self, mode: str) -> Durations: ...
