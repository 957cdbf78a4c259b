"""The device group's member list and keys: only a member writes the next list, a removed device
can neither roll the list back nor read the next epoch."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crypto.device_group import (
    Member,
    MemberList,
    _signed,
    found_group,
    open_key,
    read_member_list,
    seal_key_for,
    take_next,
    with_member,
    without_member,
)
from crypto.errors import DeviceGroupError, SealedDataTampered
from crypto.group_box import GroupKey
from crypto.identity import Identity

LAPTOP, DESKTOP, PI, STRANGER = (Identity.generate() for _ in range(4))


def _three() -> tuple[MemberList, MemberList, MemberList]:
    first = found_group(LAPTOP, "laptop")
    second = take_next(first, with_member(first, LAPTOP, Member(DESKTOP.public_key, "desktop")))
    third = take_next(second, with_member(second, DESKTOP, Member(PI.public_key, "pi")))
    return first, second, third


def test_members_join_one_at_a_time_and_a_removal_starts_a_new_epoch() -> None:
    _, _, third = _three()
    assert [m.name for m in third.members] == ["laptop", "desktop", "pi"] and third.epoch == 0
    fourth = take_next(third, without_member(third, LAPTOP, PI.public_key))
    assert not fourth.has(PI.public_key) and fourth.epoch == 1 and fourth.version == 4
    assert read_member_list(fourth.pack()) == fourth


def test_a_removed_device_cannot_write_the_next_list_or_roll_back() -> None:
    _, _, third = _three()
    fourth = take_next(third, without_member(third, LAPTOP, PI.public_key))
    # the pi, removed, signs a list that names it again
    with pytest.raises(DeviceGroupError, match="not a member"):
        take_next(fourth, with_member(fourth, PI, Member(PI.public_key, "pi")))
    with pytest.raises(DeviceGroupError, match="not after"):
        take_next(fourth, third)  # the list before the removal, signed by a member then
    with pytest.raises(DeviceGroupError, match="not a member"):
        take_next(fourth, with_member(fourth, STRANGER, Member(STRANGER.public_key, "evil")))


def test_a_forged_or_altered_list_is_refused() -> None:
    _, second, third = _three()
    altered = replace(third, members=(*third.members, Member(STRANGER.public_key, "evil")))
    with pytest.raises(DeviceGroupError, match="signature"):
        take_next(second, altered)
    other_group = found_group(DESKTOP, "desktop")
    with pytest.raises(DeviceGroupError, match="another group"):
        take_next(other_group, third)


def test_a_device_dropped_without_a_new_epoch_is_refused() -> None:
    _, _, third = _three()
    removal = without_member(third, LAPTOP, PI.public_key)
    sneaky = replace(removal, epoch=third.epoch)
    resigned = _signed(LAPTOP, sneaky.group_id, sneaky.version, sneaky.epoch, sneaky.members)
    with pytest.raises(DeviceGroupError, match="new epoch"):
        take_next(third, resigned)
    jumped = _signed(LAPTOP, removal.group_id, removal.version, removal.epoch + 5, removal.members)
    with pytest.raises(DeviceGroupError, match="jumped"):
        take_next(third, jumped)


def test_the_new_epoch_key_is_sealed_only_to_the_remaining_members() -> None:
    _, _, third = _three()
    fourth = without_member(third, LAPTOP, PI.public_key)
    key = GroupKey.generate(fourth.epoch)
    sealed = seal_key_for(fourth, key)
    assert set(sealed) == {LAPTOP.public_key, DESKTOP.public_key}
    assert open_key(DESKTOP, sealed[DESKTOP.public_key]) == key
    with pytest.raises(SealedDataTampered):
        open_key(PI, sealed[DESKTOP.public_key])
    with pytest.raises(DeviceGroupError, match="epoch"):
        seal_key_for(fourth, GroupKey.generate(0))


@given(data=st.binary(max_size=2_000))
@settings(max_examples=300)
def test_any_bytes_are_a_member_list_of_the_right_shape_or_the_error(data: bytes) -> None:
    try:
        members = read_member_list(data)
    except DeviceGroupError:
        return
    assert 0 < len(members.members) <= 32 and len(members.group_id) == 16
