"""Which parts a node runs, in start order, built from its config (the daemon starts and stops them),
and which part's host runs each command set (``node.commands.registry``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ground.errors import WiringError
from node.dashboard.web import Dashboard
from node.parts.devices import DevicesPart
from node.parts.market import MarketPart
from node.parts.memory import MemoryPart
from node.parts.metrics import MetricsPart, NodeMetrics
from node.parts.p2p import P2PPart
from node.parts.skill_ledger import file_hosts
from node.runtime.context import NodeContext
from node.runtime.lifecycle import Part, TaskSupervisor
from node.runtime.status import DaemonStatus
from node.servers.api import ApiServer
from node.servers.control import ControlServer


class _StatusHost:
    """The ``node`` commands' host (``node.commands.daemon.NodeHost``)."""

    def __init__(self, status: Callable[[], Awaitable[DaemonStatus]] | None) -> None:
        self._status = status

    async def status(self) -> DaemonStatus:
        if self._status is None:
            raise WiringError("no status here")
        return await self._status()


def build_parts(
    ctx: NodeContext, supervisor: TaskSupervisor, status: Callable[[], Awaitable[DaemonStatus]] | None = None
) -> list[Part]:
    """The node's parts in start order: memory, then the network that feeds it and the market on
    it, then the control socket (for a node run without the API) and the HTTP API (agents and the
    CLI), which both serve the one command table the other parts contribute to."""
    metrics = NodeMetrics()
    memory = MemoryPart(ctx.config, ctx.paths, supervisor, metrics=metrics)
    parts: list[Part] = [memory]
    p2p_details = None
    if ctx.config.p2p.enabled:
        p2p = P2PPart(ctx, supervisor, memory)
        devices = DevicesPart(ctx, p2p, memory, supervisor)  # registers its protocols before the host starts
        market = MarketPart(ctx, supervisor, memory, p2p)
        p2p_details = p2p.details
        parts += [devices, p2p, market]
        hosts: dict[str, Any] = {"memory": memory, "p2p": p2p, **market.hosts(), "network": p2p.network,
                                 "devices": devices.service}  # fmt: skip
    else:  # recording and pricing a skill still work: peers' ratings come from the trust file
        hosts = file_hosts(memory, ctx.config, ctx.paths)
    hosts["node"] = _StatusHost(status)
    metrics.watch(
        p2p=p2p_details,
        store=lambda: memory.store,
        restarts=lambda: {name: h.restarts for name, h in supervisor.health().items()},
        devices=(lambda: devices.syncer.last_report() if devices.syncer else {}) if ctx.config.p2p.enabled else None,
    )
    parts.append(MetricsPart(metrics, supervisor.spawn))
    parts.append(ControlServer(ctx.paths.control_socket, lambda: hosts))
    api = ctx.config.api
    if api.enabled:
        dashboard = None
        if api.dashboard:
            dashboard = hosts["ui"] = Dashboard(
                lambda: hosts,
                session_hours=api.dashboard_session_hours,
                decay=ctx.config.consolidation,
                dream_every_min=ctx.config.dream.interval_min,
                loopback_only=not api.allow_remote,
            )
        parts.append(
            ApiServer(
                api.host,
                api.port,
                ctx.paths.api_token_file,
                lambda: hosts,
                metrics=metrics.render,
                observe=metrics.observe_api_request,
                dashboard=dashboard,
                owner_token_file=ctx.paths.owner_token_file,
                locate=lambda: (ctx.loaded, ctx.paths),
            )
        )
    return parts
