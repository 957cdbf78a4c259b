"""The person's device group as a part of the daemon: it opens the group file, serves pairing, the
group's news and the sync exchange on the libp2p host, runs the sync loop, and hosts the
``devices`` commands (``memory.devices``, ``memory.sync``).

It starts after the memory part (the sync loop works on its store) and before the p2p part, whose
host it registers its protocols with while being built, so a request that arrives as soon as the
host listens finds the group file read.
"""

from __future__ import annotations

from typing import Any

from ground.errors import Unavailable
from memory.devices import news, wire
from memory.devices.desk import PairingDesk
from memory.devices.keeper import DeviceGroupKeeper
from memory.devices.service import DeviceHost, DevicesService
from memory.sync import wire as sync_wire
from memory.sync.journal import Carried
from memory.sync.replica import Replica
from memory.sync.syncer import Syncer
from memory.sync.wire import refusal_bytes
from node.parts.memory import MemoryPart
from node.parts.p2p import P2PPart
from node.runtime.context import NodeContext
from node.runtime.lifecycle import TaskSupervisor


class _HostLine:
    """The p2p part's host as the sync exchange asks through it (there once the host started)."""

    def __init__(self, p2p: P2PPart) -> None:
        self._p2p = p2p

    async def request(
        self, peer_id: str, protocol: str, payload: bytes, *, timeout_s: float = 15.0, max_bytes: int = 1 << 20
    ) -> bytes:
        host = self._p2p.host
        if host is None:
            raise Unavailable("the libp2p host is not running")
        return await host.request(peer_id, protocol, payload, timeout_s=timeout_s, max_bytes=max_bytes)


class DevicesPart:
    name = "devices"

    def __init__(self, ctx: NodeContext, p2p: P2PPart, memory: MemoryPart, supervisor: TaskSupervisor) -> None:
        cfg = ctx.config
        self._ctx, self._memory, self._supervisor = ctx, memory, supervisor
        self.keeper = DeviceGroupKeeper(ctx.identity, ctx.paths.device_group_file, now_ms=ctx.now_ms)
        self.desk = PairingDesk(self.keeper, ctx.identity, cfg.devices, cfg.node.name, now_ms=ctx.now_ms)
        self._p2p = p2p
        #: The ``devices`` commands' host; the sync loop tells it each member's status.
        self.service = DevicesService(self.keeper, self.desk, ctx.identity, cfg.node.name, self._host)
        self.syncer: Syncer | None = None
        p2p.add_service(wire.PROTOCOL, self.desk.answer)
        p2p.add_service(news.PROTOCOL, news.NewsDesk(self.keeper, now_ms=ctx.now_ms).answer)
        p2p.add_service(sync_wire.PROTOCOL, self._answer_sync)

    def _host(self) -> DeviceHost | None:
        return self._p2p.host

    async def _answer_sync(self, peer: str, request: bytes) -> bytes:
        if self.syncer is None:
            return refusal_bytes("this device's memory is not open yet")
        return await self.syncer.answer(peer, request)

    async def start(self) -> None:
        self.service.open()
        settings = self._ctx.config.devices
        carried = Carried(settings.carry_private, settings.carry_confidential, settings.share_vectors)
        replica = Replica(self._memory.running_store(), self._ctx.identity.peer_id, carried)
        await replica.open()
        syncer = Syncer(replica, self.keeper, _HostLine(self._p2p), self._ctx.identity.peer_id, settings)
        self.syncer = syncer
        self.service.status_of = syncer.status_of
        self.keeper.on_change(lambda _view: syncer.nudge())
        self._supervisor.spawn("devices-sync", syncer.run)

    async def stop(self) -> None:
        """The loop is the supervisor's (stopped with it); every group change was written when made."""
        self.syncer = None

    def details(self) -> dict[str, Any]:
        view = self.keeper.view()
        syncer = self.syncer
        return {
            "members": len(view.members.members) if view is not None else 0,
            "epoch": view.members.epoch if view is not None else None,
            "pairing_open": self.desk.is_open() is not None,
            **self.desk.counts,
            **(syncer.counters if syncer is not None else {}),
        }
