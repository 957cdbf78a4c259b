"""Validate before forward: the checks every gossip message passes before this node relays it.

Order (cheap and unauthenticated first, so forged traffic costs little): size,
decode, kind for the topic, author = originating peer, timestamp window, body
schema, signature, replay (author + nonce; authors without standing have a replay memory
of their own), per-author rate, the shared rate of authors without standing, and last the
kind's own check (``GossipKind.admit``, declared beside the kind's owner: who may send it, and
what else depends on this node's state). The first failing check decides. Every reason maps, in
``p2p.verdicts.POLICY`` (the one table), to a verdict and to the penalty the forwarding peer earns.

The validator knows no kind by name: the kinds, their topics and parsers come from the registry
(``p2p.kinds.GossipKinds``) their owners filled.

The validator runs on the libp2p thread. What it reads from the rest of the
node (trust levels) is an immutable snapshot swapped in whole; what it writes
(counters) is read through ``snapshot_counters`` under a lock.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crypto.anchors import TrustAnchors
from crypto.envelope import Envelope, decode_envelope, verify_signature
from crypto.errors import (
    BadSignature,
    EnvelopeTooLarge,
    Expired,
    FromFuture,
    MalformedEnvelope,
    Replayed,
    ReplayUndecidable,
    UnknownKind,
    UnknownVersion,
)
from crypto.peer_id import peer_id_from_ed25519
from crypto.windows import ReplayGuard, TimestampWindow
from ground.errors import FieldError, WiringError
from ground.rates import RateLimit, TokenBuckets
from p2p.kinds import GossipKind, GossipKinds
from p2p.settings import EnvelopeBounds, GossipRates
from p2p.topics import BOUNTIES_TOPIC, SKILLS_TOPIC, TRUST_TOPIC, WEATHER_TOPIC
from p2p.trust.book import STANDING_LEVELS, TrustLevel
from p2p.verdicts import POLICY, Reason, Verdict


@dataclass(frozen=True, slots=True)
class Outcome:
    verdict: Verdict
    reason: Reason
    penalty: int  # for the forwarding peer when it is a relay
    publisher_penalty: int = 0  # for the forwarding peer when it is the author
    detail: str = ""
    envelope: Envelope | None = None
    message: Any = None  # the parsed body, when accepted
    kind: GossipKind[Any] | None = None  # its kind, when accepted

    def penalty_for(self, forwarder: str, origin: str) -> int:
        return self.publisher_penalty if forwarder == origin else self.penalty


#: Fixed per-author rates of the kinds that carry no setting (a node sends these rarely).
WEATHER_RATE = RateLimit(per_s=1.0, burst=5)
TRUST_RATE = RateLimit(per_s=0.2, burst=3)
BOUNTY_RATE = RateLimit(per_s=0.2, burst=5)


class MessageValidator:
    def __init__(
        self,
        anchors: TrustAnchors,
        wire: EnvelopeBounds | None = None,
        rates: GossipRates | None = None,
        *,
        kinds: GossipKinds | None = None,
        own_key: bytes | None = None,
    ) -> None:
        self.wire = wire or EnvelopeBounds()
        rates = rates or GossipRates()
        #: The kinds this node speaks; their owners register them before the host starts.
        self.kinds = kinds if kinds is not None else GossipKinds()
        # This node's own publications are not ingestion: weather never holds them here, the
        # first peer decides (and refuses them if it does not trust this node).
        self.own_key = own_key
        s = self.wire
        self._anchors = anchors
        self._window = TimestampWindow(max_age_ms=s.max_age_ms, max_ahead_ms=s.max_ahead_ms)
        # Two replay memories: a flood from strangers fills (and raises the floor of) theirs only, so
        # peers with standing are never refused as "older than the guard remembers" because of it.
        horizon_ms = s.max_age_ms + s.max_ahead_ms
        self._replay_known = ReplayGuard(horizon_ms=horizon_ms, max_entries=s.replay_cache_entries)
        self._replay_strangers = ReplayGuard(horizon_ms=horizon_ms, max_entries=s.replay_cache_entries)
        self._rates = {
            SKILLS_TOPIC: TokenBuckets(rates.skill_rate),
            WEATHER_TOPIC: TokenBuckets(WEATHER_RATE),
            TRUST_TOPIC: TokenBuckets(TRUST_RATE),
            BOUNTIES_TOPIC: TokenBuckets(BOUNTY_RATE),
        }
        self._strangers_rates = {
            SKILLS_TOPIC: TokenBuckets(rates.strangers_skill_rate),
            BOUNTIES_TOPIC: TokenBuckets(rates.strangers_bounty_rate),
        }
        self._peer_ids: dict[bytes, str] = {}
        self._counters: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        #: Trust level of each known author (public key); replaced whole by the trust book.
        self.trust_levels: Mapping[bytes, TrustLevel] = {}
        #: Keys whose trust attestations count here (besides management keys); replaced whole.
        self.heard_attesters: frozenset[bytes] = frozenset()
        #: While now < this (network weather), kinds that wait for it hold back authors below trusted.
        self.halted_until_ms = 0

    def snapshot_counters(self) -> dict[str, dict[str, int]]:
        with self._lock:
            items = list(self._counters.items())
        out: dict[str, dict[str, int]] = {}
        for (topic, reason), count in items:
            out.setdefault(topic, {})[reason] = count
        return out

    def topics(self) -> tuple[str, ...]:
        """The topics of the registered kinds, for the host to subscribe to; a topic without a rate
        is a wiring error (what a remote key may send must be bounded)."""
        topics = self.kinds.topics
        unbounded = [topic for topic in topics if topic not in self._rates]
        if unbounded:
            raise WiringError(f"no rate is configured for the topics {unbounded}")
        return topics

    def is_management(self, key: bytes) -> bool:
        return self._anchors.is_management(key)

    def level_of(self, author: bytes) -> TrustLevel:
        if self._anchors.is_management(author):
            return TrustLevel.VERIFIED
        return self.trust_levels.get(author, TrustLevel.PROVISIONAL)

    def validate(self, topic: str, data: bytes, origin_peer: str, now_ms: int) -> Outcome:
        outcome = self._validate(topic, data, origin_peer, now_ms)
        with self._lock:
            self._counters[(topic, outcome.reason.value)] += 1
        return outcome

    def _validate(self, topic: str, data: bytes, origin_peer: str, now_ms: int) -> Outcome:
        kinds = self.kinds.names_on(topic)
        if not kinds:
            return _out(Reason.WRONG_KIND, f"no such topic {topic}")
        try:
            envelope = decode_envelope(data, kinds=kinds, max_bytes=self.wire.max_envelope_bytes)
        except EnvelopeTooLarge as exc:
            return _out(Reason.TOO_LARGE, str(exc))
        except UnknownVersion as exc:
            return _out(Reason.UNKNOWN_VERSION, str(exc))
        except UnknownKind as exc:
            return _out(Reason.WRONG_KIND, str(exc))
        except MalformedEnvelope as exc:
            return _out(Reason.MALFORMED, str(exc))
        if self._peer_id(envelope.author) != origin_peer:
            return _out(Reason.AUTHOR_MISMATCH, "the envelope's author is not the peer that published it")
        try:
            self._window.check(envelope.ts_ms, now_ms)
        except Expired as exc:
            return _out(Reason.EXPIRED, str(exc))
        except FromFuture as exc:
            return _out(Reason.FROM_FUTURE, str(exc))
        kind = self.kinds.kind(envelope.kind)
        assert kind is not None  # decode_envelope accepted only the topic's kinds
        try:
            message = kind.parse(envelope)
        except (FieldError, MalformedEnvelope) as exc:  # a SchemaError too
            return _out(Reason.SCHEMA, str(exc))
        try:
            verify_signature(envelope)
        except BadSignature as exc:
            return _out(Reason.BAD_SIGNATURE, str(exc))
        standing = self.level_of(envelope.author) in STANDING_LEVELS
        replay = self._replay_known if standing else self._replay_strangers
        try:
            replay.check(envelope.author, envelope.nonce, envelope.ts_ms, now_ms)
        except Replayed as exc:
            return _out(Reason.REPLAYED, str(exc))
        except ReplayUndecidable as exc:
            return _out(Reason.REPLAY_UNDECIDABLE, str(exc))
        # The rates come before the nonce is remembered (issue 27): what a flood sends over its rate
        # costs no replay memory, so it cannot push out what honest authors sent.
        if not self._rates[topic].allow(envelope.author, now_ms):
            return _out(Reason.RATE_LIMITED, "author over its rate")
        crowd = None if standing else self._strangers_rates.get(topic)
        if crowd is not None and not crowd.allow(b"", now_ms):
            return _out(Reason.STRANGERS_RATE_LIMITED, "authors without standing are over their shared rate")
        replay.record(envelope.author, envelope.nonce, envelope.ts_ms)
        refusal = kind.admit(self, envelope, message, now_ms)
        if refusal is not None:
            return _out(refusal.reason, refusal.detail)
        return Outcome(Verdict.ACCEPT, Reason.ACCEPTED, 0, 0, "", envelope, message, kind)

    def _peer_id(self, author: bytes) -> str:
        peer = self._peer_ids.get(author)
        if peer is None:
            if len(self._peer_ids) > 100_000:
                self._peer_ids.clear()
            peer = self._peer_ids[author] = peer_id_from_ed25519(author)
        return peer


def _out(reason: Reason, detail: str) -> Outcome:
    verdict, relay, publisher = POLICY[reason]
    return Outcome(verdict, reason, relay, publisher, detail)
