"""What the exchange needs of the person's device group (kept by ``memory.sync`` pairing code):
who the members are, the group's keys, and taking a newer member list heard from a member."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from crypto.device_group import Member, MemberList
from crypto.group_box import GroupKey


class GroupView(Protocol):
    @property
    def group_id(self) -> bytes: ...
    @property
    def members(self) -> MemberList: ...
    @property
    def keys(self) -> Mapping[int, GroupKey]: ...
    @property
    def current_key(self) -> GroupKey: ...
    def member_peer_ids(self) -> dict[str, Member]: ...


class Group(Protocol):
    def view(self) -> GroupView | None:
        """The group as this device holds it now; None when it is in none (or was removed)."""

    def adopt(self, member_list: bytes, sealed_keys: Mapping[int, bytes]) -> bool:
        """Take a newer member list and any keys sealed to this device; True if the group changed."""

    def sealed_keys_for(self, public_key: bytes) -> dict[int, bytes]:
        """Every epoch key this device holds, sealed to a member's key."""
