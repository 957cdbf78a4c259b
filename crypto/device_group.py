"""The person's device group: who is in it, said by a member list each version of which a member of
the version before signs, and the group key of each epoch sealed to each member
(docs/design/devices.md).

A member list is taken only as the next of one this device holds: the same group, a higher
version, signed by a device that was a member of the one before. So a removed device cannot roll
the list back to one that names it, and a stranger cannot write one at all. Removing a device
starts a new epoch: its key is sealed to the members that remain, and the removed device, which
holds only the old keys, cannot read what is sealed after (``crypto.group_box``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import msgpack

from crypto.errors import DeviceGroupError
from crypto.group_box import GroupKey
from crypto.identity import Identity, seal_to, verifies

#: The most devices one person's group holds (a bound on what a member list can make a device keep).
MAX_MEMBERS = 32
MAX_NAME_CHARS = 64


@dataclass(frozen=True, slots=True)
class Member:
    public_key: bytes  # the device's Ed25519 identity
    name: str  # what the person calls it ("laptop")


@dataclass(frozen=True, slots=True)
class MemberList:
    group_id: bytes
    version: int
    epoch: int  # the epoch of the group key the members hold
    members: tuple[Member, ...]
    signer: bytes
    signature: bytes

    def signed_bytes(self) -> bytes:
        return _signed_bytes(self.group_id, self.version, self.epoch, self.members, self.signer)

    def has(self, public_key: bytes) -> bool:
        return any(m.public_key == public_key for m in self.members)

    def pack(self) -> bytes:
        members = [[m.public_key, m.name] for m in self.members]
        return bytes(msgpack.packb([self.group_id, self.version, self.epoch, members, self.signer, self.signature]))


def _signed_bytes(group_id: bytes, version: int, epoch: int, members: tuple[Member, ...], signer: bytes) -> bytes:
    body = [group_id, version, epoch, [[m.public_key, m.name] for m in members], signer]
    return b"bitterbot device group v1\x00" + bytes(msgpack.packb(body))


def _signed(identity: Identity, group_id: bytes, version: int, epoch: int, members: tuple[Member, ...]) -> MemberList:
    if len(members) > MAX_MEMBERS:
        raise DeviceGroupError(f"a device group holds at most {MAX_MEMBERS} devices")
    signature = identity.sign(_signed_bytes(group_id, version, epoch, members, identity.public_key))
    return MemberList(group_id, version, epoch, members, identity.public_key, signature)


def found_group(identity: Identity, name: str) -> MemberList:
    """A new group of one: this device."""
    return _signed(identity, os.urandom(16), 1, 0, (Member(identity.public_key, name),))


def with_member(current: MemberList, identity: Identity, joining: Member) -> MemberList:
    """The next list, with ``joining`` added (same epoch: the joiner is handed the current key)."""
    if current.has(joining.public_key):
        raise DeviceGroupError("that device is already in the group")
    return _signed(identity, current.group_id, current.version + 1, current.epoch, (*current.members, joining))


def without_member(current: MemberList, identity: Identity, leaving: bytes) -> MemberList:
    """The next list without ``leaving``, in a new epoch."""
    if not current.has(leaving):
        raise DeviceGroupError("that device is not in the group")
    kept = tuple(m for m in current.members if m.public_key != leaving)
    return _signed(identity, current.group_id, current.version + 1, current.epoch + 1, kept)


def take_next(current: MemberList, candidate: MemberList) -> MemberList:
    """``candidate`` if it may follow ``current``; else ``DeviceGroupError`` saying why."""
    if candidate.group_id != current.group_id:
        raise DeviceGroupError("a member list of another group")
    if candidate.version <= current.version:
        raise DeviceGroupError(f"member list version {candidate.version} is not after {current.version}")
    if not current.has(candidate.signer):
        raise DeviceGroupError("the member list is signed by a device that is not a member")
    if not verifies(candidate.signer, candidate.signed_bytes(), candidate.signature):
        raise DeviceGroupError("the member list's signature does not hold")
    dropped = any(not candidate.has(m.public_key) for m in current.members)
    if candidate.epoch not in ((current.epoch + 1,) if dropped else (current.epoch, current.epoch + 1)):
        raise DeviceGroupError("a device left the group without a new epoch, or the epoch jumped")
    if len(candidate.members) > MAX_MEMBERS:
        raise DeviceGroupError(f"a device group holds at most {MAX_MEMBERS} devices")
    return candidate


def read_member_list(data: bytes) -> MemberList:
    """A member list from outside (its signature is checked by ``take_next``, against the list held)."""
    try:
        group_id, version, epoch, members, signer, signature = msgpack.unpackb(data, max_bin_len=1024)
        parsed = tuple(Member(bytes(k), str(n)) for k, n in members)
    except (ValueError, TypeError, msgpack.UnpackException):
        raise DeviceGroupError("a damaged member list") from None
    valid = (
        isinstance(group_id, bytes) and len(group_id) == 16 and isinstance(version, int) and version >= 1
        and isinstance(epoch, int) and epoch >= 0 and 0 < len(parsed) <= MAX_MEMBERS
        and all(len(m.public_key) == 32 and 0 < len(m.name) <= MAX_NAME_CHARS for m in parsed)
        and isinstance(signer, bytes) and isinstance(signature, bytes)
    )  # fmt: skip
    if not valid:
        raise DeviceGroupError("a member list of the wrong shape")
    return MemberList(group_id, version, epoch, parsed, signer, signature)


def seal_key_for(members: MemberList, key: GroupKey) -> dict[bytes, bytes]:
    """The epoch's key sealed to each member (only that member's identity opens its copy)."""
    if key.epoch != members.epoch:
        raise DeviceGroupError(f"the key is of epoch {key.epoch}, the members hold epoch {members.epoch}")
    return {m.public_key: seal_to(m.public_key, key.epoch.to_bytes(4, "big") + key.secret) for m in members.members}


def open_key(identity: Identity, sealed: bytes) -> GroupKey:
    opened = identity.open_sealed(sealed)
    if len(opened) != 36:
        raise DeviceGroupError("a sealed group key of the wrong length")
    return GroupKey(int.from_bytes(opened[:4], "big"), opened[4:])
