"""Asking for an issuer's newest weather (``/bitterbot/weather-newest/1``), and answering.

A node that holds a weather from an issuer whose sequence it has not confirmed in this run asks the
issuer (when connected) and a few connected peers for the newest signed weather they hold of it
(``p2p.weather.confirm`` decides what to obey). One request and one answer on a direct stream:

- request: the issuer's 32-byte Ed25519 public key, nothing else;
- answer: the newest weather envelope of that issuer this node applied or sent, as gossip carries
  it, or nothing (zero bytes) when it holds none. At most ``MAX_ANSWER_BYTES``: a longer answer is
  refused by its length before it is read.

An answer is a signed envelope, checked as gossip is (kind, signature, schema, issue time = the
envelope's), and must be the asked issuer's: a peer cannot make up a weather, only withhold the
newest or answer an older one. What an asker may cost this node is bounded by ``[p2p]
weather_answers_per_peer_per_s`` (a token bucket per peer, burst ``ANSWER_BURST``; over it the
stream is reset, which the asker counts as no answer) and by the host's stream limits; an answer is a
lookup in a map of at most one envelope per configured management key.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from crypto.envelope import Envelope, decode_envelope, verify_signature
from crypto.errors import EnvelopeError
from crypto.peer_id import peer_id_from_ed25519
from ground.clock import wall_clock_ms
from ground.errors import FieldError
from ground.events import get_logger
from ground.rates import RateLimit, TokenBuckets
from p2p.errors import InvalidValue, RequestFailed
from p2p.settings import AskSettings
from p2p.weather import KIND_WEATHER, WEATHER, Weather, WeatherSequences

log = get_logger("p2p.weather")
PROTOCOL = "/bitterbot/weather-newest/1"
#: A weather envelope is at most about 1.5 KB (a reason of 280 characters of up to 4 bytes each, and
#: the envelope's fixed fields); the bound leaves room and nothing to tune.
MAX_ANSWER_BYTES = 4_096
ANSWER_BURST = 5
KEY_BYTES = 32


@dataclass(frozen=True, slots=True)
class Signed:
    """A weather and the envelope its issuer signed it in."""

    envelope: Envelope
    weather: Weather

    @property
    def issuer(self) -> bytes:
        return self.envelope.author


@dataclass(frozen=True, slots=True)
class Heard:
    """One asked peer's answer: its newest weather of the issuer, or None (it holds none)."""

    peer: str
    newest: Signed | None
    from_issuer: bool


def read_request(raw: bytes) -> bytes:
    """The issuer a request names; ``InvalidValue`` for anything but 32 bytes."""
    if len(raw) != KEY_BYTES:
        raise InvalidValue(f"a weather request is the issuer's {KEY_BYTES}-byte key, not {len(raw)} bytes")
    return bytes(raw)


def read_answer(raw: bytes, issuer: bytes) -> Signed | None:
    """The weather in an answer about ``issuer`` (None for an empty answer); a typed error (an
    ``EnvelopeError``, a ``FieldError`` or ``InvalidValue``) for anything else."""
    if not raw:
        return None
    envelope = decode_envelope(raw, kinds={KIND_WEATHER}, max_bytes=MAX_ANSWER_BYTES)
    if envelope.author != issuer:
        raise InvalidValue("the answer is a weather of another key than the one asked about")
    weather = WEATHER.parse(envelope.body_map())
    if weather.issued_ms != envelope.ts_ms:
        raise InvalidValue("the answer's issue time differs from its envelope's timestamp")
    verify_signature(envelope)
    return Signed(envelope, weather)


class WeatherAnswers:
    """This node's side as the one asked: the newest weather it holds of the issuer named."""

    def __init__(
        self, sequences: WeatherSequences, settings: AskSettings, *, now_ms: Callable[[], int] = wall_clock_ms
    ) -> None:
        self._sequences = sequences
        self._limiter = TokenBuckets(RateLimit(settings.weather_answers_per_peer_per_s, ANSWER_BURST), max_keys=10_000)
        self._now_ms = now_ms
        self.answered = 0
        self.refused = 0  # askers over their rate

    def counts(self) -> dict[str, int]:
        return {"answered": self.answered, "answers_refused": self.refused}

    async def answer(self, asker: str, request: bytes) -> bytes:
        """The answer's bytes; ``InvalidValue`` (the host resets the stream) for a bad request or an
        asker over its rate."""
        if not self._limiter.allow(asker.encode(), self._now_ms()):
            self.refused += 1
            raise InvalidValue(f"{asker} asked for weather more often than its rate")
        newest = self._sequences.newest(read_request(request))
        self.answered += 1
        return newest.encode() if newest is not None else b""


class Connected(Protocol):
    @property
    def peer_id(self) -> str: ...

    @property
    def banned_until_ms(self) -> int | None: ...


class Requester(Protocol):
    """The host's side this module uses (``p2p.host.P2PHost``)."""

    async def peers(self) -> Sequence[Connected]: ...

    async def request(
        self, peer_id: str, protocol: str, payload: bytes, *, timeout_s: float = ..., max_bytes: int = ...
    ) -> bytes: ...


#: (issuer) -> what the peers asked answered (those that did not answer in time, or answered wrong, are absent).
Ask = Callable[[bytes], Awaitable[list[Heard]]]


def asker(host: Requester, settings: AskSettings, rng: random.Random | None = None) -> Ask:
    """What a round asks with: the issuer and peers connected to ``host`` now (not banned)."""
    chooser = rng or random.SystemRandom()  # whom a round asks is not for an attacker to predict

    async def ask(issuer: bytes) -> list[Heard]:
        connected = [s.peer_id for s in await host.peers() if s.banned_until_ms is None]
        return await ask_peers(host, connected, issuer, settings, chooser)

    return ask


async def ask_peers(
    host: Requester, connected: list[str], issuer: bytes, settings: AskSettings, rng: random.Random
) -> list[Heard]:
    """Ask the issuer (if among ``connected``) and ``settings.weather_ask_peers`` others of ``connected``, at once."""
    issuer_peer = peer_id_from_ed25519(issuer)
    others = [peer for peer in connected if peer != issuer_peer]
    sample = rng.sample(others, min(settings.weather_ask_peers, len(others)))
    asked = ([issuer_peer] if issuer_peer in connected else []) + sample
    answers = await asyncio.gather(*(_ask_one(host, peer, issuer, settings) for peer in asked))
    return [heard for heard in answers if heard is not None]


async def _ask_one(host: Requester, peer: str, issuer: bytes, settings: AskSettings) -> Heard | None:
    try:
        timeout_s = settings.weather_ask_timeout_s
        raw = await host.request(peer, PROTOCOL, issuer, timeout_s=timeout_s, max_bytes=MAX_ANSWER_BYTES)
        newest = read_answer(raw, issuer)
    except (TimeoutError, RequestFailed, EnvelopeError, FieldError, InvalidValue) as exc:
        # Not an answer: the decision goes on without it (a withheld newest weather, at worst).
        log.info("p2p.weather_ask_unanswered", peer=peer, error=str(exc)[:200])
        return None
    return Heard(peer, newest, peer == peer_id_from_ed25519(issuer))
