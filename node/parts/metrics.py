"""Prometheus metrics for the daemon, served by the local API at ``GET /metrics``.

Histograms are observed where the work happens (memory search, consolidation, dream).
Everything else is read when scraped from what the parts already keep (validator
counters, peer summary, host counters) or from a snapshot of the store that a
background task refreshes every ``REFRESH_S`` (counting crystals and purchases is a
query; a scrape must not wait on it).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from marketplace.exchange.deals import Purchases, Sales
from memory.capture.watch import watch_summary
from memory.storage.store import MemoryStore
from p2p.verdicts import POLICY, Reason

REFRESH_S = 15.0
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
_CYCLE_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


class NodeMetrics(Collector):
    """One registry per daemon: the histograms, and this collector for everything read at scrape time."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.search_seconds = Histogram(
            "bitterbot_memory_search_seconds", "Memory search latency (API, MCP, CLI through the daemon).",
            ["mode"], buckets=_LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.consolidation_seconds = Histogram(
            "bitterbot_consolidation_seconds", "Duration of consolidation cycles.",
            buckets=_CYCLE_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.dream_seconds = Histogram(
            "bitterbot_dream_seconds", "Duration of dream cycles.", buckets=_CYCLE_BUCKETS, registry=self.registry
        )
        self.api_requests = Counter(
            "bitterbot_api_requests", "Local API requests by command and HTTP status (agents and the CLI).",
            ["command", "status"], registry=self.registry,
        )  # fmt: skip
        self.capture_lines_skipped = Counter(
            "bitterbot_capture_lines_skipped", "Damaged or over-long lines continuous capture skipped (see status).",
            registry=self.registry,
        )  # fmt: skip
        self.registry.register(self)
        self._p2p: Callable[[], dict[str, Any]] | None = None
        self._store: Callable[[], MemoryStore | None] | None = None
        self._restarts: Callable[[], dict[str, int]] | None = None
        self._counts: dict[str, dict[str, int]] = {"crystals": {}, "purchases": {}, "sales": {}}

    def watch(
        self,
        *,
        p2p: Callable[[], dict[str, Any]] | None,
        store: Callable[[], MemoryStore | None],
        restarts: Callable[[], dict[str, int]] | None = None,
        devices: Callable[[], dict[str, dict[str, Any]]] | None = None,
    ) -> None:
        """Where the scrape reads from: the p2p part's details, the store, and the restarts of the
        background tasks by name (the supervisor's)."""
        self._p2p = p2p
        self._store = store
        self._restarts = restarts
        self._devices = devices

    def observe_api_request(self, command: str, status: int) -> None:
        self.api_requests.labels(command, str(status)).inc()

    def render(self) -> bytes:
        return bytes(generate_latest(self.registry))

    async def refresh_forever(self) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(REFRESH_S)

    async def refresh(self) -> None:
        store = self._store() if self._store else None
        if store is None:
            return
        stats = await store.stats()
        counts = {"crystals": {str(k): int(v) for k, v in stats["by_lifecycle"].items()}}
        counts["purchases"] = await Purchases(store).count_by_state()
        counts["sales"] = await Sales(store).count_by_state()
        counts["embedding"] = {"backlog": int(stats["embedding_backlog"])}
        capture = await watch_summary(store)  # continuous capture ([capture] watch)
        errors = capture["errors"]
        counts["capture"] = {
            "files": int(str(capture["files"])),
            "messages": int(str(capture["messages"])),
            "unreadable": len(errors) if isinstance(errors, dict) else 0,
        }
        self._counts = counts

    def _device_metrics(self) -> Iterator[Metric]:
        """Per member of the person's device group (``memory.sync``): in sync, who lacks how much,
        and how long since it was last seen."""
        report = self._devices() if self._devices else {}
        in_sync = GaugeMetricFamily(
            "bitterbot_device_in_sync", "1 when a paired device holds this device's state exactly.", labels=["peer"]
        )
        they = GaugeMetricFamily(
            "bitterbot_device_lacks", "Changes of this device's a paired device lacks.", labels=["peer"]
        )
        we = GaugeMetricFamily(
            "bitterbot_device_ahead", "Changes a paired device holds that this device lacks.", labels=["peer"]
        )
        seen = GaugeMetricFamily(
            "bitterbot_device_last_seen_seconds", "Seconds since a paired device was last heard.", labels=["peer"]
        )
        now_ms = time.time() * 1000
        for peer, status in sorted(report.items()):
            in_sync.add_metric([peer], 1.0 if status.get("in_sync") else 0.0)
            if status.get("last_seen_ms") is not None:
                they.add_metric([peer], float(status.get("they_lack") or 0))
                we.add_metric([peer], float(status.get("we_lack") or 0))
                seen.add_metric([peer], max(0.0, (now_ms - float(status["last_seen_ms"])) / 1000))
        yield from (in_sync, they, we, seen)

    def collect(self) -> Iterable[Metric]:
        return list(self._collect())

    def _collect(self) -> Iterator[Metric]:
        crystals = GaugeMetricFamily("bitterbot_crystals", "Crystals by lifecycle.", labels=["lifecycle"])
        for lifecycle, n in sorted(self._counts["crystals"].items()):
            crystals.add_metric([lifecycle], n)
        yield crystals
        yield GaugeMetricFamily(
            "bitterbot_embedding_backlog",
            "Crystals stored but not yet embedded (after an import): keyword search finds them meanwhile.",
            value=self._counts.get("embedding", {}).get("backlog", 0),
        )
        capture = self._counts.get("capture", {})
        yield GaugeMetricFamily(
            "bitterbot_capture_files", "Transcript files continuous capture follows.", value=capture.get("files", 0)
        )
        yield GaugeMetricFamily(
            "bitterbot_capture_messages", "Messages read from followed transcripts.", value=capture.get("messages", 0)
        )
        yield GaugeMetricFamily(
            "bitterbot_capture_unreadable",
            "Followed transcripts that cannot be read (see status).",
            value=capture.get("unreadable", 0),
        )
        purchases = GaugeMetricFamily("bitterbot_purchases", "Purchases (as buyer) by outcome.", labels=["state"])
        for state, n in sorted(self._counts["purchases"].items()):
            purchases.add_metric([state], n)
        yield purchases
        sales = GaugeMetricFamily("bitterbot_sales", "Sales (as seller) by state.", labels=["state"])
        for state, n in sorted(self._counts["sales"].items()):
            sales.add_metric([state], n)
        yield sales
        yield from self._device_metrics()
        restarts = CounterMetricFamily(
            "bitterbot_task_restarts", "Background tasks restarted after a failure, by task (see status).",
            labels=["task"],
        )  # fmt: skip
        for task, n in sorted((self._restarts() if self._restarts else {}).items()):
            restarts.add_metric([task], n)
        yield restarts
        details = self._p2p() if self._p2p else None
        if not details:
            return
        messages = CounterMetricFamily(
            "bitterbot_p2p_messages", "Gossip messages validated, by topic, reason and verdict.",
            labels=["topic", "reason", "verdict"],
        )  # fmt: skip
        for topic, reasons in sorted(details.get("messages", {}).items()):
            for reason, n in sorted(reasons.items()):
                verdict = POLICY[Reason(reason)][0].value if reason in Reason._value2member_map_ else "unknown"
                messages.add_metric([topic, reason, verdict], n)
        yield messages
        peers = GaugeMetricFamily("bitterbot_peers", "Connected peers by trust level.", labels=["level"])
        for level, n in sorted(details.get("peers", {}).get("by_level", {}).items()):
            peers.add_metric([level], n)
        yield peers
        yield GaugeMetricFamily("bitterbot_peers_banned", "Peers banned now.",
                                value=details.get("peers", {}).get("banned", 0))  # fmt: skip
        dropped = CounterMetricFamily(
            "bitterbot_p2p_queue_dropped", "Deliveries dropped because their lane was full.", labels=["lane"]
        )
        for lane, n in sorted(details.get("dropped_by_lane", {}).items()):
            dropped.add_metric([lane], n)
        yield dropped
        yield CounterMetricFamily("bitterbot_p2p_bans", "Peers banned since start.", value=details.get("bans", 0))


class MetricsPart:
    """Keeps the store snapshot of the metrics fresh while the daemon runs."""

    name = "metrics"

    def __init__(self, metrics: NodeMetrics, spawn: Callable[[str, Callable[[], Any]], object]) -> None:
        self._metrics = metrics
        self._spawn = spawn

    async def start(self) -> None:
        self._spawn("metrics-refresh", self._metrics.refresh_forever)

    async def stop(self) -> None:
        return None
