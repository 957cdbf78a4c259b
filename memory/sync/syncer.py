"""The sync exchange between the person's devices (``/bitterbot/devices-sync/1``): a device asks
a member for what it lacks, and answers members' asks. docs/design/devices.md has the why.

- An ask carries the asker's version vector and digest, sealed for the group; the answer, the
  operations the asker lacks (bounded in number and bytes), and a newer member list with its keys
  when the asker's is older. A stranger's ask is refused before anything in it is read; a member's
  asks are limited per minute.
- Meeting: every ``pull_every_s`` a device asks every member; when its journal writes something
  down it asks every member seen lately at once, and a member that sees in an ask that the asker
  holds more asks it back. So a change reaches an online device in about two round trips.
- Any member carries any member's operations: A's change reaches B through C.
- An answer that does not arrive is asked for half as large the next time, and twice as large
  again after a pull whose answers all came: a relay cuts a circuit past its data limit (128 KiB for go-libp2p's,
  1 MiB for ours by default), and an answer larger than that, asked again as large, never passed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from crypto.device_group import read_member_list
from crypto.errors import DeviceGroupError, GroupSealError
from memory.errors import SyncRefused
from memory.sync.group import Group
from memory.sync.replica import Replica
from memory.sync.settings import SyncSettings
from memory.sync.wire import (
    PROTOCOL,
    Answer,
    Ask,
    Outer,
    answer_bytes,
    ask_bytes,
    new_nonce,
    open_answer,
    open_ask,
    ops_within,
    read_answer_outer,
    read_ask_frame,
    refusal_bytes,
)

_log = logging.getLogger(__name__)


class Requester(Protocol):
    async def request(
        self, peer_id: str, protocol: str, payload: bytes, *, timeout_s: float = 15.0, max_bytes: int = ...
    ) -> bytes: ...


@dataclass(slots=True)
class DeviceStatus:
    """What this device knows of another member."""

    last_seen_ms: int | None = None  # the last ask or answer that came from it
    their_vector: dict[str, int] = field(default_factory=dict)
    their_digest: str = ""
    last_error: str = ""
    ops_to_ask: int | None = None  # how many operations to ask of it next (None: the setting's)
    asks_this_minute: int = 0
    minute: int = 0


@dataclass(frozen=True, slots=True)
class Pulled:
    taken: int  # operations new to this device
    asks: int


def behind(mine: Mapping[str, int], theirs: Mapping[str, int]) -> int:
    """How many of ``mine``'s operations a holder of ``theirs`` lacks."""
    return sum(max(0, n - theirs.get(device, 0)) for device, n in mine.items())


class Syncer:
    def __init__(
        self,
        replica: Replica,
        group: Group,
        requester: Requester,
        me: str,
        settings: SyncSettings,
    ) -> None:
        self.replica, self.group, self.requester, self.me, self.settings = replica, group, requester, me, settings
        self.status: dict[str, DeviceStatus] = {}
        self.counters = {"asks_answered": 0, "asks_refused": 0, "asks_made": 0, "ops_taken": 0, "ops_sent": 0}
        self._wake = asyncio.Event()
        self._ask_now: set[str] = set()
        self._pulling: dict[str, asyncio.Lock] = {}
        self._report: dict[str, dict[str, object]] = {}

    # --- answering --------------------------------------------------------------------------

    async def answer(self, peer: str, data: bytes) -> bytes:
        """The stream handler: the answer to one ask from ``peer`` (authenticated by the channel)."""
        view = self.group.view()
        member = view.member_peer_ids().get(peer) if view is not None else None
        if view is None or member is None or peer == self.me:
            self.counters["asks_refused"] += 1
            return refusal_bytes("not a member of this device's group")
        status = self.status.setdefault(peer, DeviceStatus())
        minute = int(time.monotonic() // 60)
        if status.minute != minute:
            status.minute, status.asks_this_minute = minute, 0
        status.asks_this_minute += 1
        if status.asks_this_minute > self.settings.asks_per_minute:
            self.counters["asks_refused"] += 1
            return refusal_bytes(f"more than {self.settings.asks_per_minute} asks this minute")
        try:
            frame = read_ask_frame(data)
            if frame.group_id != view.group_id:
                raise SyncRefused("an ask for another group")
            theirs = read_member_list(frame.member_list)
            if theirs.version > view.members.version:  # the asker heard of a join or a removal first
                self.group.adopt(frame.member_list, frame.sealed_keys)
                view = self.group.view()
                member = view.member_peer_ids().get(peer) if view is not None else None
                if view is None or member is None:
                    raise SyncRefused("not a member of this device's group")
            ask = open_ask(view.keys, frame, peer, self.me)
        except (SyncRefused, GroupSealError, DeviceGroupError) as exc:
            self.counters["asks_refused"] += 1
            return refusal_bytes(str(exc))
        newer = theirs.version < view.members.version
        outer = Outer(
            view.members.pack() if newer else None,
            self.group.sealed_keys_for(member.public_key) if newer else {},
            [],
        )
        mine = await self.replica.vector()
        # the digest only where it can say "the same": both hold the same operations
        digest = await self.replica.digest(mine) if ask.vector == mine else ""
        limit = min(ask.wanted, self.settings.ops_per_answer)
        missing = await self.replica.missing_for(ask.vector, limit)
        # a run from the start: each author's operations stay a run from its first
        ops = ops_within(missing, self.settings.answer_bytes)
        more = len(missing) == limit or len(ops) < len(missing)
        status.last_seen_ms, status.their_vector, status.their_digest = self._now(), ask.vector, ask.digest
        status.last_error = ""
        if behind(ask.vector, mine):  # it holds what this device lacks: ask it back
            self._ask_now.add(peer)
            self._wake.set()
        self.counters["asks_answered"] += 1
        self.counters["ops_sent"] += len(ops)
        answer = Answer(ops, mine, digest, more)
        return answer_bytes(view.current_key, view.group_id, self.me, peer, ask.nonce, answer, outer)

    # --- asking -----------------------------------------------------------------------------

    async def pull(self, peer: str) -> Pulled:
        """Ask ``peer`` for everything this device lacks, answer after answer until it has all."""
        lock = self._pulling.setdefault(peer, asyncio.Lock())
        taken = asks = 0
        confirming = False
        async with lock:
            status = self.status.setdefault(peer, DeviceStatus())
            while True:
                view = self.group.view()
                if view is None or peer not in view.member_peer_ids():
                    return Pulled(taken, asks)
                mine = await self.replica.vector()
                digest = await self.replica.digest(mine) if mine == status.their_vector else ""
                nonce = new_nonce()
                asked = status.ops_to_ask or self.settings.ops_per_answer
                ask = Ask(mine, digest, nonce, asked)
                member = view.member_peer_ids()[peer]
                payload = ask_bytes(
                    view.current_key, view.group_id, view.members.pack(), self.group.sealed_keys_for(member.public_key),
                    self.me, peer, ask,
                )  # fmt: skip
                asks += 1
                self.counters["asks_made"] += 1
                try:
                    try:
                        raw = await self.requester.request(
                            peer, PROTOCOL, payload, timeout_s=self.settings.ask_timeout_s, max_bytes=1_048_576
                        )
                    except Exception:  # cut on the way, maybe for its size: asked smaller next time
                        status.ops_to_ask = max(1, asked // 2)
                        raise
                    outer = read_answer_outer(raw)
                    if outer.member_list is not None:
                        self.group.adopt(outer.member_list, outer.sealed_keys)
                        view = self.group.view()
                        if view is None:  # this device was removed: it keeps what it has
                            return Pulled(taken, asks)
                    answer = open_answer(view.keys, view.group_id, peer, self.me, nonce, outer)
                except (SyncRefused, GroupSealError, DeviceGroupError) as exc:
                    status.last_error = str(exc)[:300]
                    _log.info("memory.sync.ask_refused", extra={"fields": {"peer": peer, "error": status.last_error}})
                    return Pulled(taken, asks)
                status.last_seen_ms, status.their_vector, status.their_digest = (
                    self._now(),
                    answer.vector,
                    answer.digest,
                )
                status.last_error = ""
                done = await self.replica.take(answer.operations)
                taken += done.kept
                self.counters["ops_taken"] += done.kept
                if not answer.more or not answer.operations:
                    # every answer of this pull came: the next may be larger again
                    status.ops_to_ask = min(self.settings.ops_per_answer, asked * 2)
                    if not answer.operations or answer.digest or confirming:
                        return Pulled(taken, asks)
                    # one more ask, now that both may hold the same: it compares the two digests
                    confirming = True

    async def pull_quietly(self, peer: str) -> None:
        """``pull``, with a device that cannot be reached noted in its status rather than raised."""
        try:
            await self.pull(peer)
        except Exception as exc:  # noqa: BLE001 - the network's many failures: offline, refused, timed out
            self.status.setdefault(peer, DeviceStatus()).last_error = f"{type(exc).__name__}: {exc}"[:300]

    # --- the loop ---------------------------------------------------------------------------

    def others(self) -> list[str]:
        view = self.group.view()
        return [p for p in view.member_peer_ids() if p != self.me] if view is not None else []

    def seen_lately(self, peer: str) -> bool:
        seen = self.status.get(peer, DeviceStatus()).last_seen_ms
        return seen is not None and self._now() - seen < 2_000 * self.settings.pull_every_s

    async def run(self) -> None:
        """Until cancelled: read the journal, and meet the members when due or told. The journal
        runs while this device is in a group (it starts when the device joins, and what it held
        before is said then) and stops when it leaves or is removed."""
        next_round = 0.0
        journaling: bool | None = None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.settings.journal_every_ms / 1000)
            self._wake.clear()
            in_group = self.group.view() is not None
            if in_group != journaling:
                await (self.replica.start() if in_group else self.replica.stop())
                journaling, next_round = in_group, 0.0
            if not in_group:
                continue
            new = await self.replica.write_down()
            due = time.monotonic() >= next_round
            peers = set(self.others()) if due else set(self._ask_now)
            if new:
                peers |= {p for p in self.others() if self.seen_lately(p)}
            self._ask_now.clear()
            if due:
                next_round = time.monotonic() + self.settings.pull_every_s
            if peers:
                await asyncio.gather(*(self.pull_quietly(p) for p in sorted(peers)))
            if peers or new or due:
                await self.report()

    def nudge(self) -> None:
        """Read the journal now (a change was just written)."""
        self._wake.set()

    def last_report(self) -> dict[str, dict[str, object]]:
        return dict(self._report)

    def status_of(self, peer: str) -> dict[str, object] | None:
        """A member's status as of the last report (``report`` refreshes it)."""
        return self._report.get(peer)

    async def report(self) -> dict[str, dict[str, object]]:
        """Per member: whether it is in sync, how far behind either side is, when it was last seen."""
        view = self.group.view()
        if view is None:
            return {}
        mine = await self.replica.vector()
        level = [s for p, s in self.status.items() if s.their_vector == mine and p in view.member_peer_ids()]
        digest = await self.replica.digest(mine) if level else ""
        out: dict[str, dict[str, object]] = {}
        for peer, member in view.member_peer_ids().items():
            if peer == self.me:
                continue
            s = self.status.get(peer, DeviceStatus())
            seen = s.last_seen_ms is not None
            out[peer] = {
                "name": member.name,
                "last_seen_ms": s.last_seen_ms,
                "in_sync": seen and bool(digest) and s.their_digest == digest and s.their_vector == mine,
                "they_lack": behind(mine, s.their_vector) if seen else None,
                "we_lack": behind(s.their_vector, mine) if seen else None,
                "last_error": s.last_error or None,
            }
        self._report = out
        return out

    def _now(self) -> int:
        return self.replica.store.now_ms()
