"""Validate before forward: the checks every gossip message passes before this node relays it.

Order (cheap and unauthenticated first, so forged traffic costs little): size,
decode, kind for the topic, author = originating peer, timestamp window, body
schema, signature, replay (author + nonce; authors without standing have a replay memory
of their own), per-author rate, the shared rate of authors without standing, trust gate
(weather and endorsements only from management keys, attestations only from management
keys and peers with standing, revocations only from the publisher, a bounty's expiry
within 30 days, skills held back from untrusted authors during weather). The
first failing check decides. Every reason maps, in ``POLICY`` (the one table), to a
verdict (accept / ignore / reject, as in gossipsub v1.1) and to the penalty the
forwarding peer earns; ``p2p.penalties`` turns penalties into disconnects and bans.

The validator runs on the libp2p thread. What it reads from the rest of the
node (trust levels) is an immutable snapshot swapped in whole; what it writes
(counters) is read through ``snapshot_counters`` under a lock.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
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
from ground.errors import FieldError
from ground.rates import RateLimit, TokenBuckets
from p2p.messages import (
    KIND_BOUNTY,
    KIND_SKILL_ENDORSEMENT,
    KIND_SKILL_LISTING,
    KIND_SKILL_REVOCATION,
    KIND_TRUST_ATTESTATION,
    KIND_WEATHER,
    MAX_BOUNTY_S,
    SkillBounty,
    SkillEndorsement,
    SkillRevocation,
    TrustAttestation,
    Weather,
    parse_bounty,
    parse_skill_endorsement,
    parse_skill_listing,
    parse_skill_revocation,
    parse_trust_attestation,
    parse_weather,
)
from p2p.topics import BOUNTIES_TOPIC, SKILLS_TOPIC, TRUST_TOPIC, WEATHER_TOPIC
from p2p.trust.book import STANDING_LEVELS, TrustLevel


class Verdict(StrEnum):
    ACCEPT = "accept"  # deliver and forward
    IGNORE = "ignore"  # drop quietly: may be honest (a late or duplicate message)
    REJECT = "reject"  # drop and hold it against the peer that sent it


class Reason(StrEnum):
    ACCEPTED = "accepted"
    TOO_LARGE = "too_large"
    MALFORMED = "malformed"
    UNKNOWN_VERSION = "unknown_version"
    WRONG_KIND = "wrong_kind"
    AUTHOR_MISMATCH = "author_mismatch"
    EXPIRED = "expired"
    FROM_FUTURE = "from_future"
    SCHEMA = "schema"
    BAD_SIGNATURE = "bad_signature"
    REPLAYED = "replayed"
    REPLAY_UNDECIDABLE = "replay_undecidable"  # older than the replay guard still remembers
    RATE_LIMITED = "rate_limited"  # the author is over its own rate
    STRANGERS_RATE_LIMITED = "strangers_rate_limited"  # authors without standing are over their shared rate
    NOT_MANAGEMENT = "not_management"
    STALE_WEATHER = "stale_weather"
    NOT_PUBLISHER = "not_publisher"
    ATTESTER_NOT_HEARD = "attester_not_heard"  # an attestation from a key without standing here
    INGESTION_HALTED = "ingestion_halted"


#: reason -> (verdict, points for a relay, points for the publisher). The one place this is decided.
#: The forwarding peer pays the relay column; when it is the message's own author (its peer id is
#: the origin), it pays the publisher column instead.
#: A reject stands for something the forwarding peer made or altered: honest relays forward only
#: what they validated themselves, and these checks give every honest node the same answer (size,
#: encoding, kind for the topic, author = origin, schema, signature). Everything that depends on
#: the receiver's own state is ignored with no points for a relay, which forwards it in good faith:
#: what this node has already seen (duplicates, replays, the replay guard's floor), its own rate
#: limits, its clock, its configured management keys, its weather sequence, its trust in an
#: attester, its weather halt. An author that floods, replays or mis-stamps its own messages
#: straight to us does pay for it: nobody else could have.
POLICY: dict[Reason, tuple[Verdict, int, int]] = {
    Reason.ACCEPTED: (Verdict.ACCEPT, 0, 0),
    Reason.TOO_LARGE: (Verdict.REJECT, 25, 25),
    Reason.MALFORMED: (Verdict.REJECT, 25, 25),
    Reason.UNKNOWN_VERSION: (Verdict.IGNORE, 0, 0),
    Reason.WRONG_KIND: (Verdict.REJECT, 25, 25),
    Reason.AUTHOR_MISMATCH: (Verdict.REJECT, 50, 50),
    Reason.EXPIRED: (Verdict.IGNORE, 0, 2),
    Reason.FROM_FUTURE: (Verdict.IGNORE, 0, 2),
    Reason.SCHEMA: (Verdict.REJECT, 25, 25),
    Reason.BAD_SIGNATURE: (Verdict.REJECT, 50, 50),
    Reason.REPLAYED: (Verdict.IGNORE, 0, 10),
    Reason.REPLAY_UNDECIDABLE: (Verdict.IGNORE, 0, 0),  # a crowd's flood can cause it: not the author's doing
    Reason.RATE_LIMITED: (Verdict.IGNORE, 0, 5),
    Reason.STRANGERS_RATE_LIMITED: (Verdict.IGNORE, 0, 0),  # likewise the crowd's
    Reason.NOT_MANAGEMENT: (Verdict.IGNORE, 0, 0),  # nodes may configure different management keys
    Reason.STALE_WEATHER: (Verdict.IGNORE, 0, 0),
    Reason.NOT_PUBLISHER: (Verdict.IGNORE, 0, 0),  # a management key elsewhere may revoke
    Reason.ATTESTER_NOT_HEARD: (Verdict.IGNORE, 0, 0),
    Reason.INGESTION_HALTED: (Verdict.IGNORE, 0, 0),
}

#: The reasons that cost a relay points: exactly what an honest relay could never have forwarded.
RELAY_FAULTS = frozenset(reason for reason, (_, relay, _) in POLICY.items() if relay > 0)

#: Which envelope kinds each topic carries.
TOPIC_KINDS: dict[str, frozenset[str]] = {
    SKILLS_TOPIC: frozenset({KIND_SKILL_LISTING, KIND_SKILL_REVOCATION, KIND_SKILL_ENDORSEMENT}),
    WEATHER_TOPIC: frozenset({KIND_WEATHER}),
    TRUST_TOPIC: frozenset({KIND_TRUST_ATTESTATION}),
    BOUNTIES_TOPIC: frozenset({KIND_BOUNTY}),
}

_PARSERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    KIND_SKILL_LISTING: parse_skill_listing,
    KIND_SKILL_REVOCATION: parse_skill_revocation,
    KIND_WEATHER: parse_weather,
    KIND_TRUST_ATTESTATION: parse_trust_attestation,
    KIND_SKILL_ENDORSEMENT: parse_skill_endorsement,
    KIND_BOUNTY: parse_bounty,
}


@dataclass(frozen=True, slots=True)
class Outcome:
    verdict: Verdict
    reason: Reason
    penalty: int  # for the forwarding peer when it is a relay
    publisher_penalty: int = 0  # for the forwarding peer when it is the author
    detail: str = ""
    envelope: Envelope | None = None
    message: Any = None  # the parsed body, when accepted

    def penalty_for(self, forwarder: str, origin: str) -> int:
        return self.publisher_penalty if forwarder == origin else self.penalty


@dataclass(frozen=True, slots=True)
class ValidatorSettings:
    max_envelope_bytes: int = 65_536
    max_age_ms: int = 300_000
    max_ahead_ms: int = 60_000
    replay_entries: int = 100_000
    skill_rate: RateLimit = RateLimit(per_s=5.0, burst=20)
    weather_rate: RateLimit = RateLimit(per_s=1.0, burst=5)
    trust_rate: RateLimit = RateLimit(per_s=0.2, burst=3)
    bounty_rate: RateLimit = RateLimit(per_s=0.2, burst=5)
    # Shared by every author without standing (provisional or untrusted): fresh keys are free, so
    # per-author rates alone do not bound strangers as a crowd.
    strangers_skill_rate: RateLimit = RateLimit(per_s=20.0, burst=100)
    strangers_bounty_rate: RateLimit = RateLimit(per_s=1.0, burst=10)


class MessageValidator:
    def __init__(
        self, anchors: TrustAnchors, settings: ValidatorSettings | None = None, *, own_key: bytes | None = None
    ) -> None:
        self.settings = settings or ValidatorSettings()
        # This node's own publications are not ingestion: weather never holds them here, the
        # first peer decides (and refuses them if it does not trust this node).
        self._own_key = own_key
        s = self.settings
        self._anchors = anchors
        self._window = TimestampWindow(max_age_ms=s.max_age_ms, max_ahead_ms=s.max_ahead_ms)
        # Two replay memories: a flood from strangers fills (and raises the floor of) theirs only, so
        # peers with standing are never refused as "older than the guard remembers" because of it.
        horizon_ms = s.max_age_ms + s.max_ahead_ms
        self._replay_known = ReplayGuard(horizon_ms=horizon_ms, max_entries=s.replay_entries)
        self._replay_strangers = ReplayGuard(horizon_ms=horizon_ms, max_entries=s.replay_entries)
        self._rates = {
            SKILLS_TOPIC: TokenBuckets(s.skill_rate),
            WEATHER_TOPIC: TokenBuckets(s.weather_rate),
            TRUST_TOPIC: TokenBuckets(s.trust_rate),
            BOUNTIES_TOPIC: TokenBuckets(s.bounty_rate),
        }
        self._strangers_rates = {
            SKILLS_TOPIC: TokenBuckets(s.strangers_skill_rate),
            BOUNTIES_TOPIC: TokenBuckets(s.strangers_bounty_rate),
        }
        self._peer_ids: dict[bytes, str] = {}
        self._weather_seq: dict[bytes, int] = {}
        self._counters: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        #: Trust level of each known author (public key); replaced whole by the trust book.
        self.trust_levels: Mapping[bytes, TrustLevel] = {}
        #: Keys whose trust attestations count here (besides management keys); replaced whole.
        self.heard_attesters: frozenset[bytes] = frozenset()
        #: While now < this, skills from authors below trusted are not ingested or forwarded.
        self.halted_until_ms = 0

    def restore_weather_sequences(self, sequences: Mapping[bytes, int]) -> None:
        with self._lock:
            self._weather_seq.update(sequences)

    def weather_sequences(self) -> dict[bytes, int]:
        with self._lock:
            return dict(self._weather_seq)

    def weather_applied(self, issuer: bytes, weather: Weather) -> None:
        """Called once a weather message has been applied: its halt holds from now on, and it and
        older sequences are stale. (Doing this at validation would make a weather that was lost
        before it was applied, and its resend, stale forever.)"""
        with self._lock:
            self._weather_seq[issuer] = max(weather.seq, self._weather_seq.get(issuer, 0))
        self.halted_until_ms = max(self.halted_until_ms, weather.until_ms) if weather.level_milli else 0

    def snapshot_counters(self) -> dict[str, dict[str, int]]:
        with self._lock:
            items = list(self._counters.items())
        out: dict[str, dict[str, int]] = {}
        for (topic, reason), count in items:
            out.setdefault(topic, {})[reason] = count
        return out

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
        kinds = TOPIC_KINDS.get(topic)
        if kinds is None:
            return _out(Reason.WRONG_KIND, f"no such topic {topic}")
        try:
            envelope = decode_envelope(data, kinds=kinds, max_bytes=self.settings.max_envelope_bytes)
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
        try:
            message = _PARSERS[envelope.kind](envelope.body_map())
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
        gate = self._trust_gate(envelope, message, now_ms)
        if gate is not None:
            return gate
        return Outcome(Verdict.ACCEPT, Reason.ACCEPTED, 0, 0, "", envelope, message)

    def _trust_gate(self, envelope: Envelope, message: Any, now_ms: int) -> Outcome | None:
        author = envelope.author
        if isinstance(message, Weather):
            if not self._anchors.is_management(author):
                return _out(Reason.NOT_MANAGEMENT, "weather from a key that is not a configured management key")
            if message.issued_ms != envelope.ts_ms:
                return _out(Reason.SCHEMA, "weather issue time differs from the envelope's timestamp")
            with self._lock:
                applied = self._weather_seq.get(author, 0)
            if message.seq <= applied:
                return _out(Reason.STALE_WEATHER, f"sequence {message.seq} already superseded")
            return None
        if isinstance(message, TrustAttestation) and not (
            self._anchors.is_management(author) or author in self.heard_attesters
        ):
            return _out(Reason.ATTESTER_NOT_HEARD, "attestations count from management keys and peers with standing")
        if isinstance(message, SkillEndorsement) and not self._anchors.is_management(author):
            return _out(Reason.NOT_MANAGEMENT, "endorsements count only from configured management keys")
        if isinstance(message, SkillBounty) and not (
            envelope.ts_ms < message.expires_ms <= envelope.ts_ms + MAX_BOUNTY_S * 1000
        ):
            return _out(Reason.SCHEMA, f"a bounty expires after it is issued and within {MAX_BOUNTY_S // 86_400} days")
        if isinstance(message, SkillRevocation):
            if author != message.publisher and not self._anchors.is_management(author):
                return _out(Reason.NOT_PUBLISHER, "only the publisher or a management key may revoke")
            return None
        halted = envelope.kind == KIND_SKILL_LISTING and now_ms < self.halted_until_ms and author != self._own_key
        if halted and self.level_of(author) not in (TrustLevel.TRUSTED, TrustLevel.VERIFIED):
            return _out(Reason.INGESTION_HALTED, "network weather: skills only from trusted peers")
        return None

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
