"""This node's side of network weather (``p2p.weather``): applying what arrives, counted and logged
when it changes what the node obeys; and on a management node, broadcasting a weather and renewing
it while it lasts (``weather broadcast``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from crypto.envelope import Envelope
from ground.events import get_logger
from p2p.errors import InvalidValue
from p2p.kinds import GossipKind, Received
from p2p.weather import Applied, NetworkWeather, Weather
from p2p.weather.ask import Signed
from p2p.weather.confirm import Confirmer

log = get_logger("node.p2p")

Publish = Callable[..., Awaitable[Envelope]]  # (kind, message, *, now_ms) -> the envelope sent


class WeatherStation:
    """Counts (``counts``, in ``status``): ``weather`` for what changed what this node obeys,
    ``weather_renewals`` for what it obeyed already, ``weather_superseded`` for what a newer one from
    the same issuer overtook. A weather from an issuer whose sequence this run has not confirmed
    waits in ``confirmer`` for a round of asking (its counts are in ``confirmer.counts``). Only a
    management node (``manager``) broadcasts."""

    def __init__(
        self,
        weather: NetworkWeather,
        me: bytes,
        now_ms: Callable[[], int],
        publish: Publish,
        *,
        manager: bool = False,
    ) -> None:
        self._weather = weather
        self._me = me
        self._now_ms = now_ms
        self._publish = publish
        self._manager = manager
        self.counts = {"weather": 0, "weather_renewals": 0, "weather_superseded": 0}
        self.confirmer = Confirmer(weather.sequences, self.obey)
        # One broadcast at a time, so that a renewal never goes out after (and undoes) a newer broadcast.
        self._broadcasting = asyncio.Lock()

    @property
    def kind(self) -> GossipKind[Weather]:
        return self._weather.kind

    async def received(self, received: Received) -> None:
        """The consumer of the weather kind: obeyed once its issuer's sequence is confirmed in this run,
        held until a round confirms it before (``p2p.weather.confirm``)."""
        assert isinstance(received.message, Weather)
        signed = Signed(received.envelope, received.message)
        if self._weather.sequences.confirmed(received.author):
            await self.obey(signed)
        else:
            self.confirmer.hold(signed)

    async def obey(self, signed: Signed) -> None:
        """Apply a weather its issuer's confirmed sequence allows, and keep it to answer with."""
        weather, issuer = signed.weather, signed.issuer
        applied = await self._weather.apply(weather, issuer)
        if applied is Applied.CHANGED:
            self._changed(weather, issuer)
        else:
            self.counts["weather_renewals" if applied is Applied.SAME else "weather_superseded"] += 1
        if applied is not Applied.SUPERSEDED:
            self._weather.sequences.keep(signed.envelope, weather.seq)

    async def broadcast_weather(self, level: float, duration_s: int, reason: str) -> dict[str, Any]:
        """``weather broadcast``: a management node's weather at ``level`` in [0, 1] (0 ends one)."""
        if not self._manager:
            raise InvalidValue('only a management node broadcasts weather (node.role = "management")')
        if not 0.0 <= level <= 1.0:
            raise InvalidValue("level must be in [0, 1]")
        weather = await self.broadcast(round(level * 1000), duration_s, reason)
        return {"seq": weather.seq, "until_ms": weather.until_ms, "level": weather.level, "reason": reason}

    async def broadcast(self, level_milli: int, duration_s: int, reason: str) -> Weather:
        """Sign, gossip and obey a weather of this node's own; it is renewed from now on."""
        async with self._broadcasting:
            now = self._now_ms()
            weather = await self._weather.next_broadcast(level_milli, duration_s, reason, now)
            envelope = await self._publish(self.kind, weather, now_ms=now)
            await self._weather.apply_own(weather, self._me)
            self._weather.sequences.keep(envelope, weather.seq)
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
                envelope = await self._publish(self.kind, weather, now_ms=renewal.issued_ms)
            except Exception:  # the next round tries again: a daemon outlives a failed send
                log.error("p2p.weather_renewal_failed", exc_info=True)
                return None
            self._weather.settle(weather, self._me)
            self._weather.sequences.keep(envelope, weather.seq)
            return weather

    def _changed(self, weather: Weather, issuer: bytes) -> None:
        self.counts["weather"] += 1
        log.warning(
            "p2p.weather",
            level=weather.level,
            until_ms=weather.until_ms,
            reason=weather.reason,
            issuer=issuer.hex()[:16],
        )
