"""Network weather, the home of its gossip kind: a cortisol override signed by a management key.

Here are the message (``Weather``, described once by ``WEATHER``), who may send it and when it is
stale (``admit_weather``), what this node does with it (``NetworkWeather.apply``: the hormonal
override, and the halt of skills from authors below trusted) and the sequence of this node's own
broadcasts. The network part registers the kind with its consumer.

A sequence is used up only once its weather is applied: a weather lost before that (a full lane,
a crash) can be sent again and is not refused as stale.

A weather is one gossip message, and a node that missed it (not yet in the sender's mesh, offline,
joining during the storm, or its one copy lost) would never learn it. So a management node renews
what it announced while it lasts (``NetworkWeather.renewal``, every ``p2p.weather_renew_s``): the same
level, reason and end, under a fresh sequence. A node that has it already finds nothing changed
(``apply`` says so, and the node logs no new event); one that missed it obeys it from then on.

A node obeys a weather only from an issuer whose sequence it confirmed in this run: its first one
from each issuer is held while it asks the issuer and a few peers for the newest they hold
(``p2p.weather.confirm``, which writes down what an attacker may try and what each move gets).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from crypto.envelope import Envelope
from ground.wire import Wire, whole, words
from memory.dynamics.hormones import HormonalState, NetworkOverride
from p2p.kinds import Gate, GossipKind, Lane, Refusal
from p2p.topics import WEATHER_TOPIC
from p2p.verdicts import Reason

KIND_WEATHER = "weather"
MAX_WEATHER_S = 7 * 86_400
#: How far from now the issue time of a weather may lie when this node has not confirmed its issuer's
#: sequence in this run (it holds none, or one from before a restart).
#: A broadcast is issued at its sending and a renewal within a second before it, and gossip crosses a
#: fleet in well under the rest; the remainder allows for clocks a few seconds apart.
FIRST_WEATHER_WINDOW_MS = 10_000


@dataclass(frozen=True, slots=True)
class Weather:
    """A network cortisol override, signed by a management key."""

    level_milli: int  # 0..1000: cortisol 0.0..1.0
    duration_s: int
    reason: str
    issued_ms: int  # equals the envelope's timestamp
    seq: int  # per management key, strictly increasing

    @property
    def level(self) -> float:
        return self.level_milli / 1000

    @property
    def until_ms(self) -> int:
        return self.issued_ms + self.duration_s * 1000


WEATHER = Wire(
    Weather,
    {
        "level_milli": whole(0, 1000),
        "duration_s": whole(1, MAX_WEATHER_S),
        "reason": words(280),
        "issued_ms": whole(0, 2**62),
        "seq": whole(1, 2**62),
    },
)


class WeatherSequences:
    """The last applied sequence per management key (read from the libp2p thread, written from the loop),
    which issuers' sequences this run confirmed, and the newest envelope applied from each (what this
    node answers when asked, ``p2p.weather.ask``). One entry per configured management key at most:
    only their weather is admitted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._applied: dict[bytes, int] = {}
        self._confirmed: set[bytes] = set()  # restored sequences are not: an offline spell may hide newer ones
        self._newest: dict[bytes, tuple[int, Envelope]] = {}

    def last(self, issuer: bytes) -> int:
        with self._lock:
            return self._applied.get(issuer, 0)

    def confirmed(self, issuer: bytes) -> bool:
        """Whether a weather of ``issuer`` was applied in this run (so its current sequence is known)."""
        with self._lock:
            return issuer in self._confirmed

    def use_up(self, issuer: bytes, seq: int) -> None:
        with self._lock:
            self._applied[issuer] = max(seq, self._applied.get(issuer, 0))
            self._confirmed.add(issuer)

    def keep(self, envelope: Envelope, seq: int) -> None:
        """Keep ``envelope`` (a weather of seq ``seq``, applied or sent) if it is its author's newest."""
        with self._lock:
            kept = self._newest.get(envelope.author)
            if kept is None or kept[0] < seq:
                self._newest[envelope.author] = (seq, envelope)

    def newest(self, issuer: bytes) -> Envelope | None:
        with self._lock:
            kept = self._newest.get(issuer)
        return kept[1] if kept is not None else None

    def restore(self, applied: Mapping[bytes, int]) -> None:
        with self._lock:
            self._applied.update(applied)

    def snapshot(self) -> dict[bytes, int]:
        with self._lock:
            return dict(self._applied)


def weather_kind(sequences: WeatherSequences) -> GossipKind[Weather]:
    """The weather kind, refusing what ``sequences`` already superseded."""

    def admit_weather(gate: Gate, envelope: Envelope, message: Any, now_ms: int) -> Refusal | None:
        assert isinstance(message, Weather)
        if not gate.is_management(envelope.author):
            return Refusal(Reason.NOT_MANAGEMENT, "weather from a key that is not a configured management key")
        if message.issued_ms != envelope.ts_ms:
            return Refusal(Reason.SCHEMA, "weather issue time differs from the envelope's timestamp")
        last = sequences.last(envelope.author)
        if message.seq <= last:
            return Refusal(Reason.STALE_WEATHER, f"sequence {message.seq} already superseded")
        # Before this run confirmed the issuer's sequence, any signed weather within the envelope's age
        # window would pass: a stranger replaying a storm's renewal after its end. Only one issued just
        # now is forwarded (the issuer sends one at least every renewal period while anything it
        # announced lasts), and even that is not obeyed before the issuer's newest is asked for
        # (``p2p.weather.confirm``): a replay within these seconds loses to any newer one learnt.
        if not sequences.confirmed(envelope.author) and abs(now_ms - message.issued_ms) > FIRST_WEATHER_WINDOW_MS:
            return Refusal(Reason.STALE_WEATHER, "a first weather from this issuer that was not issued just now")
        return None

    return GossipKind(KIND_WEATHER, WEATHER_TOPIC, WEATHER, Lane.WEATHER, admit_weather)


class Applied(Enum):
    """What applying a weather did."""

    CHANGED = "changed"  # this node obeys it now
    SAME = "same"  # it obeyed that already (a renewal)
    SUPERSEDED = "superseded"  # a newer one from its issuer was applied first: dropped


@dataclass(frozen=True, slots=True)
class Announced:
    """What a management node last announced and still stands by: a weather, or the end of one (level 0)
    while the weather it ended would have lasted."""

    level_milli: int
    reason: str
    until_ms: int


@dataclass(frozen=True, slots=True)
class Renewal:
    """The next renewal of an announcement: its end is the announcement's to the millisecond, so its
    issue time lies up to a second before now (a weather lasts whole seconds)."""

    level_milli: int
    duration_s: int
    reason: str
    issued_ms: int


def renewal_of(announced: Announced, now_ms: int) -> Renewal | None:
    """The renewal of ``announced`` at ``now_ms``; None once less than a second of it is left."""
    left_ms = announced.until_ms - now_ms
    if left_ms < 1000:
        return None
    duration_s = min(math.ceil(left_ms / 1000), MAX_WEATHER_S)
    return Renewal(announced.level_milli, duration_s, announced.reason, announced.until_ms - duration_s * 1000)


class CortisolFloor(Protocol):
    """What weather needs of the hormones (``memory.dynamics.endocrine.Endocrine`` is one): the
    override they hold, and setting or clearing it. Nothing else of the memory."""

    def state(self) -> HormonalState: ...

    async def apply_override(self, override: NetworkOverride) -> None: ...

    async def clear_override(self) -> None: ...


class HaltHolder(Protocol):
    """Where the halt of skills from authors below trusted is read (the validator)."""

    halted_until_ms: int


class NetworkWeather:
    """Weather as this node lives it: applying what arrives, numbering what it broadcasts."""

    def __init__(
        self,
        halt: HaltHolder,
        endocrine: Callable[[], CortisolFloor | None],
        saved: Callable[[], Awaitable[None]],
        sequences: WeatherSequences | None = None,
    ) -> None:
        self._halt = halt
        self._endocrine = endocrine
        self._saved = saved
        self.sequences = sequences or WeatherSequences()
        self.kind = weather_kind(self.sequences)
        self.own_seq = 0  # the sequence of this node's last broadcast
        self.announced: Announced | None = None  # what this node renews (a management node's)

    def restore(self, own_seq: int, applied: Mapping[bytes, int], me: bytes) -> None:
        self.own_seq = own_seq
        self.sequences.restore(applied)
        override = self._override()
        if override is not None and override.issued_by:
            self._halt.halted_until_ms = override.until_ms  # weather outlives a restart
            if override.issued_by == me.hex():  # and this node's own is renewed after it (not an end)
                self.announced = Announced(round(override.level * 1000), override.reason, override.until_ms)

    def _override(self) -> NetworkOverride | None:
        endocrine = self._endocrine()
        return endocrine.state().override if endocrine is not None else None

    def _changes(self, weather: Weather, issuer: bytes) -> bool:
        """Whether applying ``weather`` changes what this node obeys (a renewal of what it obeys does not)."""
        override = self._override()
        if weather.level_milli == 0:
            return override is not None
        return not (
            override is not None
            and override.issued_by == issuer.hex()
            and round(override.level * 1000) == weather.level_milli
            and override.until_ms == weather.until_ms
            and override.reason == weather.reason
        )

    async def apply(self, weather: Weather, issuer: bytes) -> Applied:
        """Raise (or clear, at level 0) the network cortisol and the halt, then use the sequence up;
        nothing if a newer weather from ``issuer`` was applied since this one was validated (two can
        pass the validator before either is applied, and gossip does not keep their order)."""
        if weather.seq <= self.sequences.last(issuer):
            return Applied.SUPERSEDED
        changed = self._changes(weather, issuer)
        endocrine = self._endocrine()
        if endocrine is not None and changed:
            if weather.level_milli == 0:
                await endocrine.clear_override()
            else:
                await endocrine.apply_override(
                    NetworkOverride(weather.level, weather.until_ms, weather.reason, issuer.hex())
                )
        self.settle(weather, issuer)
        await self._saved()
        return Applied.CHANGED if changed else Applied.SAME

    def settle(self, weather: Weather, issuer: bytes) -> None:
        """Once ``weather`` is applied: its halt holds from now on, and its sequence is used up."""
        self.sequences.use_up(issuer, weather.seq)
        self._halt.halted_until_ms = max(self._halt.halted_until_ms, weather.until_ms) if weather.level_milli else 0

    async def next_broadcast(self, level_milli: int, duration_s: int, reason: str, now_ms: int) -> Weather:
        """This node's next weather (saved before it is sent): its sequence strictly increases, even
        after a lost state."""
        self.own_seq = max(self.own_seq + 1, now_ms)
        await self._saved()
        return Weather(level_milli, duration_s, reason, now_ms, self.own_seq)

    async def apply_own(self, weather: Weather, me: bytes) -> None:
        """Apply the weather this node just broadcast: it replaces this node's own older halt, and it is
        what this node renews from now on (an end, while what it ended would have lasted)."""
        if weather.level_milli:
            self.announced = Announced(weather.level_milli, weather.reason, weather.until_ms)
        else:
            ended = self._override()
            self.announced = Announced(0, weather.reason, ended.until_ms) if ended is not None else None
        self._halt.halted_until_ms = 0
        await self.apply(weather, me)

    def renewal(self, now_ms: int, me: bytes) -> Renewal | None:
        """What to announce again now, if anything. Nothing once the announcement is over, or once this
        node obeys another weather than its own (another management node's replaced it: renewing
        would undo that on every node, back and forth)."""
        announced = self.announced
        if announced is None:
            return None
        override = self._override()
        if announced.level_milli:
            ours = override is not None and override.issued_by == me.hex() and override.until_ms == announced.until_ms
        else:
            ours = override is None
        renewal = renewal_of(announced, now_ms) if ours else None
        if renewal is None:
            self.announced = None
        return renewal

    def report(self, now_ms: int) -> dict[str, Any]:
        override = self._override()
        return {
            "active": override is not None,
            "level": override.level if override else None,
            "until_ms": override.until_ms if override else None,
            "reason": override.reason if override else None,
            "issued_by": override.issued_by if override else None,
            "halts_untrusted_ingestion": self._halt.halted_until_ms > now_ms,
        }
