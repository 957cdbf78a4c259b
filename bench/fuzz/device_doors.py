"""The doors of a person's device group (issue 51), and their seeds: the sync exchange's ask and
answer as they arrive (sealed), the answer's plaintext as it is once opened (where a member's bytes
meet the operation parser), a join request and its answer, a member list, and the group file as it
is read from disk. The keys are fixed, so the seeds open: a bent seed then tests the parser, not
only the MAC."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

from crypto.device_group import Member, found_group, read_member_list, seal_key_for, with_member
from crypto.group_box import GroupKey
from crypto.identity import Identity
from ground.authority import Speaker
from memory.devices import wire as pair_wire
from memory.devices.group_file import GroupRecord, read_group_file, write_group_file
from memory.sync.clock import Stamp
from memory.sync.operations import Change, Operation
from memory.sync.wire import (
    Answer,
    Ask,
    Outer,
    answer_bytes,
    ask_bytes,
    op_wire,
    open_answer,
    open_ask,
    read_answer_outer,
    read_answer_plain,
    read_ask_frame,
)

KEY = GroupKey(0, b"\x05" * 32)
ASKER, ANSWERER = Identity.from_seed(b"\x08" * 32), Identity.from_seed(b"\x09" * 32)
NONCE = b"\x0a" * 16


def _members() -> bytes:
    first = found_group(ASKER, "laptop")
    return with_member(first, ASKER, Member(ANSWERER.public_key, "desktop")).pack()


def _ops() -> list[Operation]:
    stamp = Stamp(1_700_000_000_000, 0, ASKER.peer_id)
    return [
        Operation(ASKER.peer_id, 1, stamp, Speaker.PERSON, Change.STORE, "c1", "Tea, not coffee.", "preference",
                  "private", details='{"created_at_ms":1700000000000,"origin":"user_input"}'),
        Operation(ASKER.peer_id, 2, stamp, Speaker.PERSON, Change.VECTOR, "c1", details="ab" * 32, model="hashing",
                  vector=b"\x00" * 32),
        Operation(ASKER.peer_id, 3, stamp, Speaker.AGENT, Change.SUPERSEDE, "c1", other="c2"),
    ]  # fmt: skip


def _answer() -> Answer:
    return Answer(_ops(), {ASKER.peer_id: 3}, "ab" * 32, False)


def sync_ask(data: bytes) -> object:
    return open_ask({0: KEY}, read_ask_frame(data), ASKER.peer_id, ANSWERER.peer_id)


def sync_answer(data: bytes) -> object:
    outer = read_answer_outer(data)
    return open_answer({0: KEY}, b"\x06" * 16, ANSWERER.peer_id, ASKER.peer_id, NONCE, outer)


class GroupFiles:
    """The group file door writes each input to a file in its own temp folder and reads it back."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.path = Path(self._tmp.name) / "group.bin"

    def read(self, data: bytes) -> object:
        self.path.write_bytes(data)
        return read_group_file(self.path)

    def close(self) -> None:
        self._tmp.cleanup()


def doors(files: GroupFiles) -> list[tuple[str, Callable[[bytes], object], str]]:
    """(name, door, shape) of each device door."""
    return [
        ("devices-sync-ask", sync_ask, "msgpack"),
        ("devices-sync-answer", sync_answer, "msgpack"),
        ("devices-sync-answer-plain", read_answer_plain, "msgpack"),
        ("devices-pair-request", pair_wire.read_request, "msgpack"),
        ("devices-pair-answer", pair_wire.read_answer, "msgpack"),
        ("devices-member-list", read_member_list, "msgpack"),
        ("devices-group-file", files.read, "msgpack"),
    ]


def seeds() -> dict[str, list[bytes]]:
    import msgpack

    members = _members()
    ask = Ask({ASKER.peer_id: 3}, "ab" * 32, NONCE, 100)
    sealed_keys = {0: seal_key_for(read_member_list(members), KEY)[ANSWERER.public_key]}
    outer = Outer(members, sealed_keys, [])
    plain = msgpack.packb({"v": {ASKER.peer_id: 3}, "d": "ab" * 32, "m": False, "o": [op_wire(o) for o in _ops()]})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "group.bin"
        write_group_file(path, GroupRecord(read_member_list(members), sealed_keys))
        group_file = path.read_bytes()
    request = pair_wire.JoinRequest(ANSWERER.public_key, "desktop", NONCE, b"\x0b" * 32)
    return {
        "devices-sync-ask": [ask_bytes(KEY, b"\x06" * 16, members, sealed_keys, ASKER.peer_id, ANSWERER.peer_id, ask)],
        "devices-sync-answer": [
            answer_bytes(KEY, b"\x06" * 16, ANSWERER.peer_id, ASKER.peer_id, NONCE, _answer(), outer)
        ],
        "devices-sync-answer-plain": [bytes(plain)],
        "devices-pair-request": [request.pack()],
        "devices-pair-answer": [pair_wire.pack_answer(pair_wire.Welcome(members, sealed_keys))],
        "devices-member-list": [members],
        "devices-group-file": [group_file],
    }
