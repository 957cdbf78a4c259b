"""A gossip kind, declared once by the part that owns it, and the registry the host reads.

A kind is everything one message type needs on the network, in one declaration beside its owner
(Lighthouse keeps a topic's type, validation and handler together):

- ``name`` and ``topic``: what the envelope says, and where it travels;
- ``wire``: its fields and limits (``ground.wire.Wire``), from which the parser of an untrusted
  body and the builder of the body a sender signs are derived;
- ``lane``: where an accepted message waits for the daemon (``p2p.deliveries``);
- ``admit``: the kind's own check, run by the validator after the checks every message passes
  (size, envelope, author, time window, schema, signature, replay, rates): who may send it, and
  anything else that depends on this node's state. It reads that state through ``Gate``.

The owner registers the kind and its consumer together (``GossipKinds.register``). The validator,
the host and the delivery loop know no kind by name: they read this registry. Registration ends
before the host starts (the validator reads the registry from the libp2p thread).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

from crypto.envelope import Envelope, pack_body, seal_envelope
from crypto.identity import Identity
from ground.errors import WiringError
from ground.wire import Wire
from p2p.trust.book import TrustLevel
from p2p.verdicts import Reason

T = TypeVar("T")


class Lane(StrEnum):
    """Where an accepted message waits; served in ``p2p.deliveries.PRIORITY`` order."""

    WEATHER = "weather"
    CONTROL = "control"  # small messages that undo or mark what listings did
    TRUST = "trust"
    BOUNTIES = "bounties"
    LISTINGS = "listings"


class Gate(Protocol):
    """What a kind's ``admit`` may read of this node's state (the validator's view, safe to read
    from the libp2p thread)."""

    @property
    def own_key(self) -> bytes | None: ...

    @property
    def halted_until_ms(self) -> int: ...  # network weather: ingestion from authors below trusted waits

    @property
    def heard_attesters(self) -> frozenset[bytes]: ...

    def is_management(self, key: bytes) -> bool: ...

    def level_of(self, key: bytes) -> TrustLevel: ...


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why ``admit`` refused a message; ``reason`` decides the verdict and penalty (``POLICY``)."""

    reason: Reason
    detail: str


#: A kind's own check of an accepted-so-far message: (gate, envelope, message, now_ms) -> refusal or None.
Admit = Callable[[Gate, Envelope, Any, int], Refusal | None]


def admit_any(gate: Gate, envelope: Envelope, message: Any, now_ms: int) -> Refusal | None:
    """Every author may send it: the checks every message passes are enough."""
    return None


@dataclass(frozen=True, slots=True)
class GossipKind(Generic[T]):
    name: str
    topic: str
    wire: Wire[T]
    lane: Lane
    admit: Admit = admit_any

    def parse(self, envelope: Envelope) -> T:
        """The typed message in ``envelope`` (untrusted), or ``FieldError`` naming the wrong field."""
        return self.wire.parse(envelope.body_map())

    def seal(self, identity: Identity, message: T, now_ms: int) -> Envelope:
        """``message`` signed by ``identity``, ready to gossip on ``topic``."""
        return seal_envelope(identity, self.name, pack_body(self.wire.body(message)), now_ms=now_ms)


@dataclass(frozen=True, slots=True)
class Received:
    """One accepted gossip message: its typed body, the envelope it came in, and its topic."""

    message: Any
    envelope: Envelope
    topic: str

    @property
    def author(self) -> bytes:
        return self.envelope.author


Consumer = Callable[[Received], Awaitable[None]]


class GossipKinds:
    """The kinds this node speaks, each with the consumer its owner registered."""

    def __init__(self) -> None:
        self._kinds: dict[str, GossipKind[Any]] = {}
        self._consumers: dict[str, Consumer] = {}
        #: Accepted messages of a kind nobody consumes (validated and forwarded only), by kind.
        self.unconsumed: dict[str, int] = {}

    def register(self, kind: GossipKind[Any], consumer: Consumer | None = None) -> None:
        """Speak ``kind``; ``consumer`` takes each accepted message of it (None: validate and forward only)."""
        if kind.name in self._kinds:
            raise WiringError(f"gossip of kind {kind.name!r} is already registered")
        self._kinds[kind.name] = kind
        if consumer is not None:
            self._consumers[kind.name] = consumer

    def kind(self, name: str) -> GossipKind[Any] | None:
        return self._kinds.get(name)

    @property
    def topics(self) -> tuple[str, ...]:
        """Every topic a registered kind travels on, in registration order."""
        return tuple(dict.fromkeys(kind.topic for kind in self._kinds.values()))

    def names_on(self, topic: str) -> frozenset[str]:
        """The kinds that travel on ``topic`` (empty for a topic this node does not speak)."""
        return frozenset(name for name, kind in self._kinds.items() if kind.topic == topic)

    async def dispatch(self, received: Received) -> bool:
        """Hand ``received`` to its kind's consumer; False (and counted) when none is registered."""
        name = received.envelope.kind
        consumer = self._consumers.get(name)
        if consumer is None:
            self.unconsumed[name] = self.unconsumed.get(name, 0) + 1
            return False
        await consumer(received)
        return True
