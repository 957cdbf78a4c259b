"""The device group file beside the memory database (``<data dir>/devices/group.bin``): the member
list this device holds and, for each epoch it holds, the group key sealed to this device's own
identity (``crypto.identity.seal_to``), so the file never holds a bare key.

Written whole each time, atomically (a 0600 temporary file, fsynced, renamed over the old one):
a crash leaves the old file or the new one. A file that cannot be read is refused with a
``GroupFileCorrupt`` that says how to start over; nothing else of the node is touched.

    msgpack [FORMAT, VERSION, member list (packed) or nil, {epoch: sealed key}, removed or nil]
    removed = [group id, member list version, at ms, signer of that list]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import msgpack

from crypto.device_group import MAX_MEMBERS, MemberList, read_member_list
from crypto.errors import DeviceGroupError
from crypto.private_file import write_private_atomically
from memory.errors import GroupFileCorrupt

FORMAT = "bitterbot-node/devices"
VERSION = 1
#: A file of 32 members and a key per epoch is a few KB; anything past this is not ours.
MAX_FILE_BYTES = 1_048_576
#: The epochs whose keys a device keeps (each removal starts one).
MAX_EPOCHS = 10_000


@dataclass(frozen=True, slots=True)
class Removed:
    """This device was taken out of a group: by the member list ``version`` that ``by`` signed (this
    device itself, when it left). It keeps its memory; the group's later keys never reach it."""

    group_id: bytes
    version: int
    at_ms: int
    by: bytes


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """What the file holds: the group this device is in (or none), and whether it was removed from one."""

    members: MemberList | None = None
    sealed_keys: Mapping[int, bytes] = field(default_factory=dict)
    removed: Removed | None = None


def write_group_file(path: Path, record: GroupRecord) -> None:
    removed = record.removed
    doc = [
        FORMAT,
        VERSION,
        record.members.pack() if record.members is not None else None,
        dict(record.sealed_keys),
        [removed.group_id, removed.version, removed.at_ms, removed.by] if removed is not None else None,
    ]
    write_private_atomically(path, bytes(msgpack.packb(doc)))


def read_group_file(path: Path) -> GroupRecord | None:
    """The record in ``path``; None when there is no file (this device never paired)."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GroupFileCorrupt(path, f"unreadable: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise GroupFileCorrupt(path, f"larger than {MAX_FILE_BYTES} bytes")
    try:
        doc = msgpack.unpackb(data, strict_map_key=False, max_map_len=MAX_EPOCHS)
    except (ValueError, TypeError, msgpack.UnpackException):
        raise GroupFileCorrupt(path, "damaged or cut short") from None
    if not (isinstance(doc, list) and len(doc) == 5 and doc[0] == FORMAT):
        raise GroupFileCorrupt(path, f"not a {FORMAT} file")
    if doc[1] != VERSION:
        raise GroupFileCorrupt(path, f"format version {doc[1]!r}, this bitterbot-node reads {VERSION}")
    _, _, packed, sealed, removed = doc
    return GroupRecord(_members(path, packed), _sealed_keys(path, sealed), _removed(path, removed))


def _members(path: Path, packed: object) -> MemberList | None:
    if packed is None:
        return None
    if not isinstance(packed, bytes) or len(packed) > MAX_MEMBERS * 512:
        raise GroupFileCorrupt(path, "its member list is not one")
    try:
        return read_member_list(packed)
    except DeviceGroupError as exc:
        raise GroupFileCorrupt(path, f"its member list: {exc}") from None


def _sealed_keys(path: Path, sealed: object) -> dict[int, bytes]:
    if not isinstance(sealed, dict) or not all(
        isinstance(e, int) and 0 <= e < 2**32 and isinstance(k, bytes) and len(k) < 256 for e, k in sealed.items()
    ):
        raise GroupFileCorrupt(path, "its sealed keys are not a map of epochs to keys")
    return dict(sealed)


def _removed(path: Path, removed: object) -> Removed | None:
    if removed is None:
        return None
    if not isinstance(removed, list):
        raise GroupFileCorrupt(path, "its record of a removal is not one")
    valid = (
        len(removed) == 4
        and isinstance(removed[0], bytes) and isinstance(removed[1], int)
        and isinstance(removed[2], int) and isinstance(removed[3], bytes)
    )  # fmt: skip
    if not valid:
        raise GroupFileCorrupt(path, "its record of a removal is not one")
    return Removed(removed[0], removed[1], removed[2], removed[3])
