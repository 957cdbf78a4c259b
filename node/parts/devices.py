"""The person's device group as a part of the daemon: it opens the group file, serves pairing and
the group's news on the libp2p host, and hosts the ``devices`` commands (``memory.devices``).

It starts before the p2p part, whose host it registers its two protocols with while being built,
so a join request that arrives as soon as the host listens finds the group file read.
"""

from __future__ import annotations

from typing import Any

from memory.devices import news, wire
from memory.devices.desk import PairingDesk
from memory.devices.keeper import DeviceGroupKeeper
from memory.devices.service import DeviceHost, DevicesService
from node.parts.p2p import P2PPart
from node.runtime.context import NodeContext


class DevicesPart:
    name = "devices"

    def __init__(self, ctx: NodeContext, p2p: P2PPart) -> None:
        cfg = ctx.config
        self.keeper = DeviceGroupKeeper(ctx.identity, ctx.paths.device_group_file, now_ms=ctx.now_ms)
        self.desk = PairingDesk(self.keeper, ctx.identity, cfg.devices, cfg.node.name, now_ms=ctx.now_ms)
        self._p2p = p2p
        #: The ``devices`` commands' host; the sync loop sets its ``status_of``.
        self.service = DevicesService(self.keeper, self.desk, ctx.identity, cfg.node.name, self._host)
        p2p.add_service(wire.PROTOCOL, self.desk.answer)
        p2p.add_service(news.PROTOCOL, news.NewsDesk(self.keeper, now_ms=ctx.now_ms).answer)

    def _host(self) -> DeviceHost | None:
        return self._p2p.host

    async def start(self) -> None:
        self.service.open()

    async def stop(self) -> None:
        """Nothing runs: every change was written to the file when it was made."""

    def details(self) -> dict[str, Any]:
        view = self.keeper.view()
        return {
            "members": len(view.members.members) if view is not None else 0,
            "epoch": view.members.epoch if view is not None else None,
            "pairing_open": self.desk.is_open() is not None,
            **self.desk.counts,
        }
