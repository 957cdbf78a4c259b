"""What the sync tests share: a device group kept in memory from the real crypto
(``crypto.device_group``), and a line between syncers in one process that stands in for the
libp2p stream (bytes in, bytes out, the asker's peer id given as the channel authenticates it).
The daemon tests run the same exchange over real libp2p hosts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from crypto.device_group import (
    Member,
    MemberList,
    found_group,
    open_key,
    read_member_list,
    seal_key_for,
    take_next,
    with_member,
    without_member,
)
from crypto.group_box import GroupKey
from crypto.identity import Identity
from crypto.peer_id import peer_id_from_ed25519
from memory.sync.syncer import Syncer


@dataclass(frozen=True)
class View:
    group_id: bytes
    members: MemberList
    keys: Mapping[int, GroupKey]

    @property
    def current_key(self) -> GroupKey:
        return self.keys[self.members.epoch]

    def member_peer_ids(self) -> dict[str, Member]:
        return {peer_id_from_ed25519(m.public_key): m for m in self.members.members}


@dataclass
class KeptGroup:
    """One device's hold on the group: its member list and the keys sealed to it."""

    identity: Identity
    members: MemberList | None = None
    keys: dict[int, GroupKey] = field(default_factory=dict)
    removed: bool = False

    def view(self) -> View | None:
        if self.members is None or self.removed:
            return None
        return View(self.members.group_id, self.members, dict(self.keys))

    def adopt(self, member_list: bytes, sealed_keys: Mapping[int, bytes]) -> bool:
        assert self.members is not None
        newer = take_next(self.members, read_member_list(member_list))
        for sealed in sealed_keys.values():
            key = open_key(self.identity, sealed)
            self.keys[key.epoch] = key
        self.members = newer
        if not newer.has(self.identity.public_key):
            self.removed = True
        return True

    def sealed_keys_for(self, public_key: bytes) -> dict[int, bytes]:
        out = {}
        for epoch, key in self.keys.items():
            at = MemberList(b"", 0, epoch, (Member(public_key, "x"),), b"", b"")
            out[epoch] = seal_key_for(at, key)[public_key]
        return out

    @property
    def peer_id(self) -> str:
        return self.identity.peer_id


def found(identity: Identity) -> KeptGroup:
    kept = KeptGroup(identity, found_group(identity, "first"))
    kept.keys[0] = GroupKey.generate(0)
    return kept


def join(inviter: KeptGroup, joiner: KeptGroup, name: str) -> None:
    """What pairing leaves behind: the joiner in the inviter's list, holding its keys."""
    assert inviter.members is not None
    inviter.members = with_member(inviter.members, inviter.identity, Member(joiner.identity.public_key, name))
    joiner.members = inviter.members
    joiner.keys = dict(inviter.keys)


def remove(by: KeptGroup, leaving: KeptGroup) -> None:
    assert by.members is not None
    by.members = without_member(by.members, by.identity, leaving.identity.public_key)
    by.keys[by.members.epoch] = GroupKey.generate(by.members.epoch)


class Line:
    """Syncers by peer id; ``request`` hands the bytes to the answerer as a stream would."""

    def __init__(self) -> None:
        self.syncers: dict[str, Syncer] = {}
        self.down: set[str] = set()  # peer ids that cannot be reached (a partition)
        self.bytes_sent = 0
        #: An answer bigger than this is cut, as a relay cuts a circuit past its data limit.
        self.cut_past_bytes: int | None = None

    def for_peer(self, me: str) -> Requester:
        return Requester(self, me)


@dataclass
class Requester:
    line: Line
    me: str

    async def request(
        self, peer_id: str, protocol: str, payload: bytes, *, timeout_s: float = 15.0, max_bytes: int = 1 << 20
    ) -> bytes:
        if peer_id in self.line.down or self.me in self.line.down:
            raise ConnectionError(f"{peer_id} cannot be reached")
        answer = await self.line.syncers[peer_id].answer(self.me, payload)
        if self.line.cut_past_bytes is not None and len(answer) > self.line.cut_past_bytes:
            raise ConnectionResetError(f"the circuit to {peer_id} was cut past {self.line.cut_past_bytes} bytes")
        self.line.bytes_sent += len(payload) + len(answer)
        assert len(answer) <= max_bytes
        return answer
