"""Trust attestations, the home of their gossip kind: a node's signed local trust in the peers it
has dealt with, the input of EigenTrust.

Only management keys and peers with standing here are heard (``admit_attestation``); what arrives
is folded into the trust book by the network part, which registers the kind with its consumer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crypto.envelope import Envelope
from ground.fields import field
from ground.wire import Spec, Wire
from p2p.errors import SchemaError
from p2p.kinds import Gate, GossipKind, Lane, Refusal
from p2p.topics import TRUST_TOPIC
from p2p.verdicts import Reason

KIND_TRUST_ATTESTATION = "trust.attestation"
MAX_ATTESTED_PEERS = 256


@dataclass(frozen=True, slots=True)
class TrustAttestation:
    """A node's local trust in the peers it has dealt with, for EigenTrust."""

    ratings: tuple[tuple[bytes, int], ...]  # (peer public key, local trust in thousandths)


def _ratings(doc: dict[str, Any], name: str) -> tuple[tuple[bytes, int], ...]:
    ratings = field(doc, name, list)
    if len(ratings) > MAX_ATTESTED_PEERS:
        raise SchemaError(f"{name!r} holds at most {MAX_ATTESTED_PEERS} peers")
    parsed: list[tuple[bytes, int]] = []
    seen: set[bytes] = set()
    for entry in ratings:
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not isinstance(entry[0], bytes)
            or len(entry[0]) != 32
            or type(entry[1]) is not int
            or not 0 <= entry[1] <= 1000
        ):
            raise SchemaError("each rating is [32-byte public key, 0..1000]")
        if entry[0] in seen:
            raise SchemaError("a peer is rated twice")
        seen.add(entry[0])
        parsed.append((bytes(entry[0]), int(entry[1])))
    return tuple(parsed)


ATTESTATION = Wire(
    TrustAttestation, {"ratings": Spec(_ratings, lambda ratings: [[key, milli] for key, milli in ratings])}
)


def admit_attestation(gate: Gate, envelope: Envelope, message: Any, now_ms: int) -> Refusal | None:
    if gate.is_management(envelope.author) or envelope.author in gate.heard_attesters:
        return None
    return Refusal(Reason.ATTESTER_NOT_HEARD, "attestations count from management keys and peers with standing")


ATTESTATION_KIND = GossipKind(KIND_TRUST_ATTESTATION, TRUST_TOPIC, ATTESTATION, Lane.TRUST, admit_attestation)
