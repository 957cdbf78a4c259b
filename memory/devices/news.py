"""Telling the other members that the group changed (``/bitterbot/devices-news/1``): after
``devices remove``, the device that removed one sends the new member list to every device of the
list before, with the new epoch's key sealed to each member that stays. So the removed device
learns at once that it is out (``DeviceGroupKeeper.adopt``), and the others take the new key.

    request  msgpack ["news", 1, member list (packed), {epoch: key sealed to the receiver}]
    answer   msgpack [changed: bool] or ["refused", why]

A device listens only to members of the list it holds (the stream's peer id, which Noise proved),
and only the next list of its own is taken: a stranger or a removed device changes nothing. A
member that is offline hears the list later, from the sync loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import msgpack

from crypto.errors import DeviceGroupError
from crypto.peer_id import peer_id_from_ed25519
from ground.clock import wall_clock_ms
from ground.events import get_logger
from ground.rates import RateLimit, TokenBuckets
from memory.devices.joining import Dialer
from memory.devices.keeper import DeviceGroupKeeper, GroupChange

log = get_logger("memory.devices")
PROTOCOL = "/bitterbot/devices-news/1"
MAX_NEWS_BYTES = 262_144
NEWS_TIMEOUT_S = 10.0


def pack_news(member_list: bytes, sealed_keys: Mapping[int, bytes]) -> bytes:
    return bytes(msgpack.packb(["news", 1, member_list, dict(sealed_keys)]))


class NewsDesk:
    """This device's side as the one told: ``answer`` is the host's stream handler."""

    def __init__(self, keeper: DeviceGroupKeeper, *, now_ms: Callable[[], int] = wall_clock_ms) -> None:
        self._keeper = keeper
        self._now_ms = now_ms
        self._rates = TokenBuckets(RateLimit(1.0, 10), max_keys=1_000)

    async def answer(self, peer_id: str, raw: bytes) -> bytes:
        return bytes(msgpack.packb(self._take(peer_id, raw)))

    def _take(self, peer_id: str, raw: bytes) -> list[object]:
        view = self._keeper.view()
        if view is None or peer_id not in view.member_peer_ids():
            return ["refused", "not a member of this device's group"]
        if len(raw) > MAX_NEWS_BYTES or not self._rates.allow(peer_id.encode(), self._now_ms()):
            return ["refused", "too large or too often"]
        try:
            kind, version, members, sealed = msgpack.unpackb(raw, strict_map_key=False)
            if kind != "news" or version != 1 or not isinstance(members, bytes) or not isinstance(sealed, dict):
                return ["refused", "not news"]
            return [self._keeper.adopt(members, sealed)]
        except (ValueError, TypeError, msgpack.UnpackException, DeviceGroupError) as exc:
            log.info("devices.news_refused", peer=peer_id, error=str(exc)[:200])
            return ["refused", "not a list this device can take"]


async def tell_members(host: Dialer, change: GroupChange, me: str) -> int:
    """Send ``change`` to every device of the list before it but this one, at once; how many took it."""
    after = change.after.pack()

    async def tell(peer_id: str, public_key: bytes) -> bool:
        payload = pack_news(after, change.sealed.get(public_key, {}))
        try:
            raw = await host.request(peer_id, PROTOCOL, payload, timeout_s=NEWS_TIMEOUT_S, max_bytes=1_024)
            return bool(msgpack.unpackb(raw) == [True])
        except Exception as exc:  # noqa: BLE001 - an offline member hears it later, from the sync loop
            log.info("devices.news_not_delivered", peer=peer_id, error=str(exc)[:200])
            return False

    others = [(peer_id_from_ed25519(m.public_key), m.public_key) for m in change.before.members]
    told = await asyncio.gather(*(tell(pid, key) for pid, key in others if pid != me))
    return sum(told)
