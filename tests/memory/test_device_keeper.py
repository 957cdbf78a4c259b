"""The device group file and its keeper (``memory.devices``): what a device holds of its group
survives a restart, a damaged file is refused without touching anything else, a member list is
taken only as the next of the one held, and a device removed from the group leaves it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from crypto.device_group import Member, _signed, found_group
from crypto.errors import DeviceGroupError
from crypto.identity import Identity
from crypto.peer_id import peer_id_from_ed25519
from memory.devices.group_file import read_group_file
from memory.devices.keeper import DeviceGroupKeeper, GroupView
from memory.errors import AlreadyInGroup, GroupFileCorrupt, NotInGroup

T0 = 1_767_225_600_000


class Device:
    def __init__(self, root: Path, name: str) -> None:
        self.identity = Identity.generate()
        self.name = name
        self.path = root / name / "devices" / "group.bin"
        self.keeper = self.reopen()

    def reopen(self) -> DeviceGroupKeeper:
        keeper = DeviceGroupKeeper(self.identity, self.path, now_ms=lambda: T0)
        keeper.open()
        return keeper

    @property
    def member(self) -> Member:
        return Member(self.identity.public_key, self.name)

    def view(self) -> GroupView:
        view = self.keeper.view()
        assert view is not None
        return view


def paired(inviter: Device, joiner: Device) -> GroupView:
    """``joiner`` joins ``inviter``'s group as pairing does: admitted, then handed the list and keys."""
    after = inviter.keeper.admit(joiner.member, inviter.name)
    sealed = inviter.keeper.sealed_keys_for(joiner.identity.public_key)
    return joiner.keeper.join(inviter.identity.public_key, after.members.pack(), sealed)


@pytest.fixture
def laptop(tmp_path: Path) -> Device:
    return Device(tmp_path, "laptop")


@pytest.fixture
def desktop(tmp_path: Path) -> Device:
    return Device(tmp_path, "desktop")


@pytest.fixture
def pi(tmp_path: Path) -> Device:
    return Device(tmp_path, "pi")


def test_a_paired_group_survives_a_restart_and_no_bare_key_is_on_disk(laptop: Device, desktop: Device) -> None:
    assert laptop.keeper.view() is None and not laptop.path.exists()
    joined = paired(laptop, desktop)
    assert joined.current_key == laptop.view().current_key and joined.members.epoch == 0
    assert set(joined.member_peer_ids()) == {laptop.identity.peer_id, desktop.identity.peer_id}
    assert joined.me == desktop.member
    for device in (laptop, desktop):
        assert stat.S_IMODE(device.path.stat().st_mode) == 0o600
        assert joined.current_key.secret not in device.path.read_bytes()  # sealed to the device, never bare
        again = device.reopen().view()
        assert again is not None and again.members == joined.members and dict(again.keys) == dict(joined.keys)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda data: data[: len(data) // 2], "damaged or cut short"),
        (lambda data: b"", "damaged or cut short"),
        (lambda data: b"not msgpack at all \xc1", "damaged or cut short"),
        (
            lambda data: data.replace(b"bitterbot-node/devices", b"bitterbot-node/xevices"),
            "not a bitterbot-node/devices",
        ),
    ],
)
def test_a_damaged_file_is_refused_with_the_fix_and_nothing_else_is_touched(
    laptop: Device, desktop: Device, damage: object, says: str
) -> None:
    paired(laptop, desktop)
    memory_db = desktop.path.parent.parent / "memory" / "crystals.db"
    memory_db.parent.mkdir(parents=True)
    memory_db.write_bytes(b"the person's memory")
    assert callable(damage)
    broken = damage(desktop.path.read_bytes())
    desktop.path.write_bytes(broken)
    with pytest.raises(GroupFileCorrupt, match=says) as refused:
        desktop.reopen()
    assert "Move the file aside and pair this device again" in str(refused.value)
    assert desktop.path.read_bytes() == broken and memory_db.read_bytes() == b"the person's memory"


def test_a_file_that_is_not_this_devices_is_refused(laptop: Device, desktop: Device, tmp_path: Path) -> None:
    paired(laptop, desktop)
    stranger = DeviceGroupKeeper(Identity.generate(), desktop.path)
    with pytest.raises(GroupFileCorrupt, match="does not name this device"):
        stranger.open()


def test_a_file_whose_list_was_changed_is_refused(laptop: Device, desktop: Device) -> None:
    paired(laptop, desktop)
    data = desktop.path.read_bytes()
    desktop.path.write_bytes(data.replace(b"desktop", b"deskbop"))  # a member's name edited in place
    with pytest.raises(GroupFileCorrupt, match="signature does not hold"):
        desktop.reopen()


def test_an_older_list_changes_nothing_and_a_forged_one_is_refused(laptop: Device, desktop: Device, pi: Device) -> None:
    paired(laptop, desktop)
    old = laptop.view().members
    with_pi = laptop.keeper.admit(pi.member, laptop.name).members
    assert desktop.keeper.adopt(with_pi.pack(), {}) is True and desktop.view().members == with_pi
    assert desktop.keeper.adopt(with_pi.pack(), {}) is False  # the same list again: no change
    assert desktop.keeper.adopt(old.pack(), {}) is False  # a rollback to before the pi: refused
    assert desktop.view().members == with_pi and desktop.reopen().view().members == with_pi  # type: ignore[union-attr]
    stranger = Identity.generate()
    forged = _signed(
        stranger, old.group_id, with_pi.version + 1, with_pi.epoch, (*with_pi.members, Member(stranger.public_key, "x"))
    )
    with pytest.raises(DeviceGroupError, match="not a member"):
        desktop.keeper.adopt(forged.pack(), {})
    other_group = found_group(laptop.identity, "laptop")
    with pytest.raises(DeviceGroupError, match="another group"):
        desktop.keeper.adopt(other_group.pack(), {})
    assert desktop.view().members == with_pi


def test_a_removed_device_leaves_keeps_a_record_and_is_handed_no_key(
    laptop: Device, desktop: Device, pi: Device
) -> None:
    paired(laptop, desktop)
    paired(laptop, pi)
    desktop.keeper.adopt(laptop.view().members.pack(), {})
    heard: list[GroupView | None] = []
    pi.keeper.on_change(heard.append)
    change = laptop.keeper.remove(desktop.identity.public_key)
    after = laptop.view()
    assert after.members.epoch == 1 and not after.members.has(desktop.identity.public_key)
    assert set(after.keys) == {0, 1} and after.current_key.epoch == 1
    with pytest.raises(DeviceGroupError, match="only to a member"):
        laptop.keeper.sealed_keys_for(desktop.identity.public_key)
    assert desktop.identity.public_key not in change.sealed
    # the pi takes the list with its new key; without the key it would refuse the list
    with pytest.raises(DeviceGroupError, match="without a key of its epoch 1"):
        pi.keeper.adopt(after.members.pack(), {})
    assert pi.keeper.adopt(after.members.pack(), change.sealed[pi.identity.public_key]) is True
    assert pi.view().current_key == after.current_key and heard == [pi.keeper.view()]
    # the desktop hears the list that no longer names it: it leaves, and remembers why
    assert desktop.keeper.adopt(after.members.pack(), {}) is True
    assert desktop.keeper.view() is None
    removed = desktop.keeper.removed()
    assert removed is not None and removed.version == after.members.version and removed.by == laptop.identity.public_key
    reopened = desktop.reopen()
    assert reopened.view() is None and reopened.removed() == removed
    record = read_group_file(desktop.path)
    assert record is not None and not record.sealed_keys  # it keeps no group key
    assert desktop.keeper.adopt(after.members.pack(), {}) is False  # in no group: nothing to adopt


def test_leaving_is_removing_this_device_and_joining_needs_no_group(
    laptop: Device, desktop: Device, pi: Device
) -> None:
    paired(laptop, desktop)
    with pytest.raises(AlreadyInGroup, match="remove it from that group first"):
        desktop.keeper.join(pi.identity.public_key, b"", {})
    change = desktop.keeper.remove(desktop.identity.public_key)
    assert desktop.keeper.view() is None and desktop.keeper.removed() is not None
    assert laptop.keeper.adopt(change.after.pack(), change.sealed[laptop.identity.public_key]) is True
    assert laptop.view().members.epoch == 1 and len(laptop.view().members.members) == 1
    assert paired(pi, desktop).members.has(desktop.identity.public_key)  # free to join another group
    assert desktop.keeper.removed() is None


def test_a_join_answer_not_signed_by_the_inviter_is_refused(laptop: Device, desktop: Device, pi: Device) -> None:
    after = laptop.keeper.admit(desktop.member, laptop.name)
    sealed = laptop.keeper.sealed_keys_for(desktop.identity.public_key)
    with pytest.raises(DeviceGroupError, match="not signed by the device that invited"):
        desktop.keeper.join(pi.identity.public_key, after.members.pack(), sealed)
    with pytest.raises(DeviceGroupError, match="no key of the group's epoch"):
        desktop.keeper.join(laptop.identity.public_key, after.members.pack(), {})
    assert desktop.keeper.view() is None and not desktop.path.exists()


def test_changes_need_a_group(laptop: Device, desktop: Device) -> None:
    with pytest.raises(NotInGroup):
        laptop.keeper.remove(desktop.identity.public_key)
    with pytest.raises(NotInGroup):
        laptop.keeper.sealed_keys_for(desktop.identity.public_key)
    assert peer_id_from_ed25519(laptop.identity.public_key) == laptop.identity.peer_id


async def test_a_damaged_file_leaves_the_node_in_no_group_and_every_command_says_why(
    laptop: Device, desktop: Device
) -> None:
    from memory.devices.desk import PairingDesk
    from memory.devices.service import DevicesService
    from memory.devices.settings import DevicesSettings

    paired(laptop, desktop)
    desktop.path.write_bytes(desktop.path.read_bytes()[:20])
    keeper = DeviceGroupKeeper(desktop.identity, desktop.path)
    service = DevicesService(
        keeper,
        PairingDesk(keeper, desktop.identity, DevicesSettings(), "desktop"),
        desktop.identity,
        "desktop",
        lambda: None,
    )
    service.open()  # no raise: the node goes on
    for call in (service.listing(), service.pair(), service.join("BBPAIR1-X-Y", None), service.remove("laptop")):
        with pytest.raises(GroupFileCorrupt, match="Move the file aside"):
            await call
    desktop.path.rename(desktop.path.with_name("group.bin.damaged"))
    assert (await service.listing())["group_id"] is None  # moved aside: a fresh start


async def test_news_of_a_change_is_heard_from_members_only(laptop: Device, desktop: Device, pi: Device) -> None:
    import msgpack

    from memory.devices.news import NewsDesk, pack_news

    paired(laptop, desktop)
    paired(laptop, pi)
    desktop.keeper.adopt(laptop.view().members.pack(), {})
    change = laptop.keeper.remove(pi.identity.public_key)
    news = pack_news(change.after.pack(), change.sealed[desktop.identity.public_key])
    desk = NewsDesk(desktop.keeper)
    stranger = Identity.generate().peer_id
    assert msgpack.unpackb(await desk.answer(stranger, news))[0] == "refused"  # not a member: not even read
    assert desktop.view().members.epoch == 0
    assert msgpack.unpackb(await desk.answer(laptop.identity.peer_id, b"\xc1junk"))[0] == "refused"
    assert msgpack.unpackb(await desk.answer(laptop.identity.peer_id, news)) == [True]
    assert desktop.view().members.epoch == 1 and desktop.view().current_key == laptop.view().current_key
    # the removed pi, once a member, is no longer heard by the desktop
    assert msgpack.unpackb(await desk.answer(pi.identity.peer_id, news))[0] == "refused"
