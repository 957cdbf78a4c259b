"""This node's side of network weather (``p2p.weather``): applying what arrives, counted and logged
when it changes what the node obeys; and on a management node, broadcasting a weather and renewing
it while it lasts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from crypto.envelope import Envelope
from ground.events import get_logger
from p2p.kinds import GossipKind, Received
from p2p.weather import Applied, NetworkWeather, Weather

log = get_logger("node.p2p")

Publish = Callable[..., Awaitable[Envelope]]  # (kind, message, *, now_ms) -> the envelope sent


class WeatherStation:
    """Counts go to ``ingested`` (the P2P part's ``status``): ``weather`` for what changed what this
    node obeys, ``weather_renewals`` for what it obeyed already, ``weather_superseded`` for what a
    newer one from the same issuer overtook."""

    def __init__(
        self,
        weather: NetworkWeather,
        me: bytes,
        now_ms: Callable[[], int],
        publish: Publish,
        ingested: dict[str, int],
    ) -> None:
        self._weather = weather
        self._me = me
        self._now_ms = now_ms
        self._publish = publish
        self._ingested = ingested
        for key in ("weather", "weather_renewals", "weather_superseded"):
            ingested.setdefault(key, 0)
        # One broadcast at a time, so that a renewal never goes out after (and undoes) a newer broadcast.
        self._broadcasting = asyncio.Lock()

    @property
    def kind(self) -> GossipKind[Weather]:
        return self._weather.kind

    async def received(self, received: Received) -> None:
        """The consumer of the weather kind."""
        assert isinstance(received.message, Weather)
        applied = await self._weather.apply(received.message, received.author)
        if applied is Applied.CHANGED:
            self._changed(received.message, received.author)
        else:
            self._ingested["weather_renewals" if applied is Applied.SAME else "weather_superseded"] += 1

    async def broadcast(self, level_milli: int, duration_s: int, reason: str) -> Weather:
        """Sign, gossip and obey a weather of this node's own; it is renewed from now on."""
        async with self._broadcasting:
            now = self._now_ms()
            weather = await self._weather.next_broadcast(level_milli, duration_s, reason, now)
            await self._publish(self.kind, weather, now_ms=now)
            await self._weather.apply_own(weather, self._me)
        self._changed(weather, self._me)
        return weather

    async def renew_every(self, every_s: float) -> None:
        """Announce this node's weather again every ``every_s`` while it lasts: a node that missed the
        one broadcast, or joined after it, obeys it from the next renewal."""
        while True:
            await asyncio.sleep(every_s)
            await self.renew_once()

    async def renew_once(self) -> Weather | None:
        """Announce this node's weather again now, if it has one to renew; the weather sent, or None."""
        async with self._broadcasting:
            renewal = self._weather.renewal(self._now_ms(), self._me)
            if renewal is None:
                return None
            weather = await self._weather.next_broadcast(
                renewal.level_milli, renewal.duration_s, renewal.reason, renewal.issued_ms
            )
            try:
                await self._publish(self.kind, weather, now_ms=renewal.issued_ms)
            except Exception:  # the next round tries again: a daemon outlives a failed send
                log.error("p2p.weather_renewal_failed", exc_info=True)
                return None
            self._weather.settle(weather, self._me)
            return weather

    def _changed(self, weather: Weather, issuer: bytes) -> None:
        self._ingested["weather"] += 1
        log.warning(
            "p2p.weather",
            level=weather.level,
            until_ms=weather.until_ms,
            reason=weather.reason,
            issuer=issuer.hex()[:16],
        )
