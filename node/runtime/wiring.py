"""Which parts a node runs, in start order, built from its config (the daemon starts and stops them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from node.parts.market import MarketPart
from node.parts.memory import MemoryPart
from node.parts.metrics import MetricsPart, NodeMetrics
from node.parts.p2p import P2PPart
from node.runtime.context import NodeContext
from node.runtime.lifecycle import Part, TaskSupervisor
from node.runtime.status import DaemonStatus
from node.servers.api import ApiServer
from node.servers.control import ControlServer, Handler


def build_parts(
    ctx: NodeContext, supervisor: TaskSupervisor, status: Callable[[], DaemonStatus] | None = None
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
        p2p_details = p2p.details
        parts += [p2p, MarketPart(ctx, supervisor, memory, p2p)]
    metrics.watch(p2p=p2p_details, store=lambda: memory.store)
    parts.append(MetricsPart(metrics, supervisor.spawn))

    async def status_command(args: dict[str, Any]) -> dict[str, Any]:
        if status is None:
            raise ValueError("no status here")
        return asdict(status())

    def handlers() -> dict[str, Handler]:
        table: dict[str, Handler] = {"status": status_command}
        for part in parts:
            commands = getattr(part, "commands", None)
            if callable(commands):
                table.update(commands())
        return table

    parts.append(ControlServer(ctx.paths.control_socket, handlers))
    api = ctx.config.api
    if api.enabled:
        parts.append(
            ApiServer(
                api.host,
                api.port,
                ctx.paths.api_token_file,
                handlers,
                metrics=metrics.render,
                observe=metrics.observe_api_request,
            )
        )
    return parts
