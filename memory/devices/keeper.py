"""The device group as the rest of the node sees it: who is in it, with which keys, and every change
to it (a device paired, one removed, a newer member list heard from another member), each written
to the group file before anyone is told (``memory.devices.group_file``).

The sync loop asks ``view()`` whom to sync with and with which keys, hands ``adopt`` the member
lists and sealed keys members send it, asks ``sealed_keys_for`` what to send a member that lacks a
key, and learns of a change through ``on_change``. Pairing calls ``admit`` (inviting) and ``join``;
the ``devices remove`` command calls ``remove``.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from crypto.device_group import (
    Member,
    MemberList,
    found_group,
    open_key,
    read_member_list,
    take_next,
    with_member,
    without_member,
)
from crypto.errors import DeviceGroupError, SealedDataError
from crypto.group_box import GroupKey
from crypto.identity import Identity, seal_to, verifies
from crypto.peer_id import peer_id_from_ed25519
from ground.clock import wall_clock_ms
from ground.events import get_logger
from memory.devices.group_file import GroupRecord, Removed, read_group_file, write_group_file
from memory.errors import AlreadyInGroup, GroupFileCorrupt, NotInGroup

log = get_logger("memory.devices")

#: Called with the new view (None: this device is in no group now) after every change.
ChangeCallback = Callable[["GroupView | None"], None]


@dataclass(frozen=True, slots=True)
class GroupView:
    """The group this device is in, as of one moment: its member list and every epoch key it holds."""

    group_id: bytes
    members: MemberList
    keys: Mapping[int, GroupKey]
    me: Member

    @property
    def current_key(self) -> GroupKey:
        """The key of the members' epoch: what this device seals with now."""
        return self.keys[self.members.epoch]

    def member_peer_ids(self) -> dict[str, Member]:
        """Each member by its libp2p peer id (the id its connections are authenticated as)."""
        return {peer_id_from_ed25519(m.public_key): m for m in self.members.members}


@dataclass(frozen=True, slots=True)
class GroupChange:
    """A change this device made (``remove``): the new list and, for each member that stays, the new
    epoch's key sealed to it, for telling the others (``memory.devices.news``)."""

    before: MemberList
    after: MemberList
    sealed: Mapping[bytes, dict[int, bytes]] = field(default_factory=dict)


class DeviceGroupKeeper:
    """The device group of this node's ``identity``, kept in the file at ``path``."""

    def __init__(self, identity: Identity, path: Path, *, now_ms: Callable[[], int] = wall_clock_ms) -> None:
        self._identity = identity
        self.path = path
        self._now_ms = now_ms
        self._view: GroupView | None = None
        self._removed: Removed | None = None
        self._callbacks: list[ChangeCallback] = []

    def open(self) -> None:
        """Read the file (none: this device is in no group). ``GroupFileCorrupt`` when it cannot be used."""
        record = read_group_file(self.path)
        if record is None:
            return
        self._removed = record.removed
        if record.members is not None:
            self._view = self._checked(record)

    def _checked(self, record: GroupRecord) -> GroupView:
        members = record.members
        assert members is not None
        me = self._identity.public_key
        if not verifies(members.signer, members.signed_bytes(), members.signature):
            raise GroupFileCorrupt(self.path, "its member list's signature does not hold")
        if not members.has(me):
            raise GroupFileCorrupt(self.path, "its member list does not name this device (another node's file?)")
        keys: dict[int, GroupKey] = {}
        for epoch, sealed in record.sealed_keys.items():
            try:
                key = open_key(self._identity, sealed)
            except (SealedDataError, DeviceGroupError):
                raise GroupFileCorrupt(
                    self.path, f"the key of epoch {epoch} does not open with this identity"
                ) from None
            if key.epoch != epoch:
                raise GroupFileCorrupt(self.path, f"the key filed as epoch {epoch} is of epoch {key.epoch}")
            keys[epoch] = key
        if members.epoch not in keys:
            raise GroupFileCorrupt(self.path, f"it holds no key of the members' epoch {members.epoch}")
        return _view(members, keys, me)

    # --- what the node reads -------------------------------------------------------------------

    def view(self) -> GroupView | None:
        """The group this device is in now, or None."""
        return self._view

    def removed(self) -> Removed | None:
        """When this device was last taken out of a group (and is in none since), or None."""
        return self._removed if self._view is None else None

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback(view)`` after every change (synchronously, on the caller's loop); returns
        what stops it. A callback that raises is logged and the others still run."""
        self._callbacks.append(callback)
        return lambda: self._callbacks.remove(callback)

    def sealed_keys_for(self, public_key: bytes) -> dict[int, bytes]:
        """Every epoch key this device holds, sealed to ``public_key``, a member of the group now
        (``DeviceGroupError`` for anyone else: a removed device is never handed a key)."""
        view = self._require()
        if not view.members.has(public_key):
            raise DeviceGroupError("keys are sealed only to a member of the group")
        return {epoch: _sealed(public_key, key) for epoch, key in view.keys.items()}

    # --- changes -------------------------------------------------------------------------------

    def adopt(self, member_list: bytes, sealed_keys: Mapping[int, bytes]) -> bool:
        """Take a member list a member sent, and the epoch keys it sealed to this device; True if the
        view changed. Call it only with what a member of the group sent (a sealed key proves nothing
        of its sender). The same list adds only keys of epochs not held; an older one (a member that
        is behind, or a rollback) changes nothing; one that may not follow the list held (another
        group, a forged or non-member signature, a removal without a new epoch, two different lists
        of one version) raises ``DeviceGroupError``. A list that no longer names this device removes
        it: it keeps its memory and leaves the group."""
        view = self._view
        if view is None:
            return False
        candidate = read_member_list(member_list)
        current = view.members
        if candidate.group_id == current.group_id and candidate.version <= current.version:
            if candidate.version < current.version:
                log.info("devices.stale_list", version=candidate.version, held=current.version)
                return False
            if candidate.pack() != current.pack():
                raise DeviceGroupError(
                    f"a different member list of version {current.version}: two devices changed the group at once"
                )
            added = self._opened(sealed_keys, current.epoch, skip=view.keys)
            if not added:
                return False
            self._set(current, {**view.keys, **added})
            return True
        following = take_next(current, candidate)
        me = self._identity.public_key
        if not following.has(me):
            removed = Removed(following.group_id, following.version, self._now_ms(), following.signer)
            log.warning("devices.removed", version=following.version, by=following.signer.hex()[:16])
            self._set(None, {}, removed)
            return True
        keys = {**view.keys, **self._opened(sealed_keys, following.epoch, skip=view.keys)}
        if following.epoch not in keys:
            raise DeviceGroupError(
                f"member list version {following.version} came without a key of its epoch {following.epoch}"
            )
        self._set(following, keys)
        return True

    def admit(self, joining: Member, my_name: str) -> GroupView:
        """Add ``joining`` (pairing, as the inviting device): the group is founded first if this device
        is in none. ``DeviceGroupError`` if it is a member already or the group is full."""
        view = self._view
        if view is None:
            members, keys = found_group(self._identity, my_name), {0: GroupKey.generate(0)}
        else:
            members, keys = view.members, dict(view.keys)
        following = with_member(members, self._identity, joining)
        self._set(following, keys)
        assert self._view is not None
        return self._view

    def join(self, inviter: bytes, member_list: bytes, sealed_keys: Mapping[int, bytes]) -> GroupView:
        """Become a member of the group ``inviter`` (the device the pairing code named) answered with.
        ``AlreadyInGroup`` if this device is in one; ``DeviceGroupError`` for an answer that is not a
        list the inviter signed naming this device with a key of its epoch."""
        if self._view is not None:
            raise AlreadyInGroup()
        members = read_member_list(member_list)
        if members.signer != inviter or not verifies(inviter, members.signed_bytes(), members.signature):
            raise DeviceGroupError("the member list is not signed by the device that invited this one")
        if not members.has(self._identity.public_key):
            raise DeviceGroupError("the inviting device's member list does not name this device")
        keys = self._opened(sealed_keys, members.epoch, skip={})
        if members.epoch not in keys:
            raise DeviceGroupError(f"the inviting device sent no key of the group's epoch {members.epoch}")
        self._set(members, keys)
        assert self._view is not None
        return self._view

    def remove(self, public_key: bytes) -> GroupChange:
        """The group without ``public_key``, in a new epoch whose key is sealed to the members that
        stay. Removing this device itself is leaving: it keeps its memory and is in no group after."""
        view = self._require()
        following = without_member(view.members, self._identity, public_key)
        new_key = GroupKey.generate(following.epoch)
        sealed = {m.public_key: {new_key.epoch: _sealed(m.public_key, new_key)} for m in following.members}
        if public_key == self._identity.public_key:
            self._set(None, {}, Removed(following.group_id, following.version, self._now_ms(), public_key))
        else:
            self._set(following, {**view.keys, new_key.epoch: new_key})
        log.info("devices.removed_member", version=following.version, epoch=following.epoch)
        return GroupChange(view.members, following, sealed)

    # --- inside --------------------------------------------------------------------------------

    def _require(self) -> GroupView:
        if self._view is None:
            raise NotInGroup()
        return self._view

    def _opened(
        self, sealed_keys: Mapping[int, bytes], up_to: int, *, skip: Mapping[int, GroupKey]
    ) -> dict[int, GroupKey]:
        """The keys sealed to this device, of epochs up to ``up_to`` not in ``skip`` (a key held is never replaced)."""
        opened: dict[int, GroupKey] = {}
        for epoch, sealed in sealed_keys.items():
            if not isinstance(epoch, int) or epoch in skip or not 0 <= epoch <= up_to:
                continue
            try:
                key = open_key(self._identity, sealed)
            except SealedDataError:
                raise DeviceGroupError(f"the key of epoch {epoch} is not sealed to this device") from None
            if key.epoch != epoch:
                raise DeviceGroupError(f"the key sent as epoch {epoch} is of epoch {key.epoch}")
            opened[epoch] = key
        return opened

    def _set(self, members: MemberList | None, keys: Mapping[int, GroupKey], removed: Removed | None = None) -> None:
        """Write the new state to the file (each key sealed to this device), then take it as the
        view, then tell the callbacks: nobody hears of a change the file does not hold."""
        me = self._identity.public_key
        write_group_file(self.path, GroupRecord(members, {e: _sealed(me, k) for e, k in keys.items()}, removed))
        self._removed = removed
        self._view = _view(members, keys, me) if members is not None else None
        for callback in list(self._callbacks):
            try:
                callback(self._view)
            except Exception:
                log.error("devices.change_callback_failed", exc_info=True)


def _view(members: MemberList, keys: Mapping[int, GroupKey], me: bytes) -> GroupView:
    mine = next(m for m in members.members if m.public_key == me)
    return GroupView(members.group_id, members, types.MappingProxyType(dict(keys)), mine)


def _sealed(public_key: bytes, key: GroupKey) -> bytes:
    """``key`` sealed to ``public_key`` (the form ``crypto.device_group.open_key`` opens)."""
    return seal_to(public_key, key.epoch.to_bytes(4, "big") + key.secret)
