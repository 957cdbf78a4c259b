"""What the ``devices`` commands run (``node.commands.devices``): open a pairing code, join a group
by one, list the group, remove a device. Each answer is plain JSON; the texts read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from crypto.identity import Identity
from crypto.pairing import MAX_ADDR_CHARS, MAX_ADDRS
from crypto.peer_id import peer_id_from_ed25519
from ground.events import get_logger
from memory.devices.desk import PairingDesk
from memory.devices.joining import Dialer, join_group
from memory.devices.keeper import DeviceGroupKeeper
from memory.devices.news import tell_members
from memory.errors import DeviceNotFound, DevicesOffline, GroupFileCorrupt, NotInGroup

log = get_logger("memory.devices")

#: What the sync loop may tell of a member (``status_of``): in sync, how far behind, last seen.
StatusOf = Callable[[str], dict[str, Any] | None]


class DeviceHost(Dialer, Protocol):
    """The node's libp2p host as pairing uses it (``p2p.host.P2PHost``)."""

    def dialable_addrs(self) -> list[str]: ...


class DevicesService:
    def __init__(
        self,
        keeper: DeviceGroupKeeper,
        desk: PairingDesk,
        identity: Identity,
        my_name: str,
        host: Callable[[], DeviceHost | None],
    ) -> None:
        self.keeper = keeper
        self.desk = desk
        self._identity = identity
        self._my_name = my_name
        self._host = host
        #: Filled by the sync loop: a member's sync status by peer id, None when it knows none.
        self.status_of: StatusOf | None = None
        self._damaged: GroupFileCorrupt | None = None

    def open(self) -> None:
        """Read the group file. A damaged one does not stop the node (its memory is untouched): this
        device is in no group until the person moves the file aside, and every command says so."""
        try:
            self.keeper.open()
        except GroupFileCorrupt as exc:
            log.error("devices.group_file_damaged", path=str(exc.path), detail=exc.detail)
            self._damaged = exc

    def _usable(self) -> None:
        if self._damaged is not None and self.keeper.path.exists():
            raise self._damaged
        self._damaged = None  # moved aside: start over

    def _running(self) -> DeviceHost:
        self._usable()
        host = self._host()
        if host is None:
            raise DevicesOffline()
        return host

    async def pair(self) -> dict[str, Any]:
        """A new one-time code naming this device and where it listens (the one open before is closed)."""
        addrs = tuple(a.split("/p2p/")[0] for a in self._running().dialable_addrs())
        opened = self.desk.open(tuple(a for a in addrs if len(a) <= MAX_ADDR_CHARS)[:MAX_ADDRS])
        code = opened.code
        return {
            "code": code.text(),
            "expires_ms": opened.expires_ms,
            "peer_id": code.peer_id,
            "addrs": list(code.addrs),
        }

    async def join(self, code: str, name: str | None) -> dict[str, Any]:
        """Join the group of the device that printed ``code``."""
        view = await join_group(code, name or self._my_name, self.keeper, self._identity, self._running())
        return {"joined": view.group_id.hex(), "members": len(view.members.members), "version": view.members.version}

    async def listing(self) -> dict[str, Any]:
        """Each member: name, peer id, whether it is this device, and what the sync loop knows of it."""
        self._usable()
        view = self.keeper.view()
        removed = self.keeper.removed()
        open_code = self.desk.is_open()
        doc: dict[str, Any] = {
            "group_id": None,
            "version": None,
            "epoch": None,
            "members": [],
            "pairing_open_until_ms": open_code.expires_ms if open_code is not None else None,
            "removed": None,
        }
        if removed is not None:
            left = removed.by == self._identity.public_key
            by = peer_id_from_ed25519(removed.by)
            doc["removed"] = {"group_id": removed.group_id.hex(), "version": removed.version, "at_ms": removed.at_ms,
                              "by": by, "left": left}  # fmt: skip
        if view is None:
            return doc
        doc.update(group_id=view.group_id.hex(), version=view.members.version, epoch=view.members.epoch)
        for peer_id, member in view.member_peer_ids().items():
            status = self.status_of(peer_id) if self.status_of is not None else None
            this = member.public_key == self._identity.public_key
            doc["members"].append({"name": member.name, "peer_id": peer_id, "this_device": this, "sync": status})
        return doc

    async def remove(self, device: str) -> dict[str, Any]:
        """Remove the member whose peer id (or name, when one member has it) is ``device``: a new
        epoch, its key sealed to the rest, and the news sent to every device of the list before."""
        self._usable()
        view = self.keeper.view()
        if view is None:
            raise NotInGroup()
        by_id = view.member_peer_ids()
        named = [m for m in by_id.values() if m.name == device]
        member = by_id.get(device) or (named[0] if len(named) == 1 else None)
        if member is None:
            raise DeviceNotFound(device)
        change = self.keeper.remove(member.public_key)
        host = self._host()
        told = await tell_members(host, change, self._identity.peer_id) if host is not None else 0
        return {
            "removed": peer_id_from_ed25519(member.public_key),
            "left": member.public_key == self._identity.public_key,
            "version": change.after.version,
            "epoch": change.after.epoch,
            "told": told,
        }
