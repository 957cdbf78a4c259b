"""The verdict on a gossip message and why: one reason per check, and in ``POLICY`` (the one table)
the verdict each reason earns (accept / ignore / reject, as in gossipsub v1.1) and the penalty the
forwarding peer pays for it (``p2p.penalties`` turns penalties into disconnects and bans).
"""

from __future__ import annotations

from enum import StrEnum


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
