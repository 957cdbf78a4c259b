"""Skill endorsements, the home of their gossip kind: a management key vouches for one version of a
seller's skill ("verified").

Here are the message (``SkillEndorsement``, described once by ``ENDORSEMENT``), who may send one
(management keys only) and what this node does with it (``consume_endorsement``: kept per seller,
skill and endorser, and the crystals holding the endorsed text are marked verified by that key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crypto.envelope import Envelope
from ground.wire import Wire, digest, ident, key, whole
from marketplace.gossip.sink import MarketKind, MarketSink, log
from marketplace.gossip.skill_bytes import held_skill
from memory.storage.crystal_queries import mark_verified
from memory.storage.store import MemoryStore
from p2p.kinds import Gate, GossipKind, Lane, Received, Refusal
from p2p.topics import SKILLS_TOPIC
from p2p.verdicts import Reason

KIND_SKILL_ENDORSEMENT = "skill.endorsement"


@dataclass(frozen=True, slots=True)
class SkillEndorsement:
    """A management key vouches for one version of a seller's skill (its content hash): "verified"."""

    seller: bytes
    stable_skill_id: str
    version: int
    content_hash: str


ENDORSEMENT = Wire(
    SkillEndorsement,
    {"seller": key(), "stable_skill_id": ident(), "version": whole(1, 10**6), "content_hash": digest()},
)


def admit_endorsement(gate: Gate, envelope: Envelope, message: Any, now_ms: int) -> Refusal | None:
    if gate.is_management(envelope.author):
        return None
    return Refusal(Reason.NOT_MANAGEMENT, "endorsements count only from configured management keys")


ENDORSEMENT_KIND = GossipKind(KIND_SKILL_ENDORSEMENT, SKILLS_TOPIC, ENDORSEMENT, Lane.CONTROL, admit_endorsement)


async def record_endorsement(store: MemoryStore, endorsement: SkillEndorsement, envelope: Envelope) -> None:
    """Keep a management key's endorsement (its newest per seller and skill); crystals holding the
    endorsed content are marked verified by that key."""
    async with store.transaction() as db:
        await db.execute(
            "INSERT INTO endorsements (seller, stable_skill_id, endorser, version, content_hash, received_ms, "
            "envelope) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seller, stable_skill_id, endorser) DO UPDATE SET "
            "version = excluded.version, content_hash = excluded.content_hash, received_ms = excluded.received_ms, "
            "envelope = excluded.envelope WHERE excluded.version >= endorsements.version",
            (
                endorsement.seller.hex(), endorsement.stable_skill_id, envelope.author.hex(), endorsement.version,
                endorsement.content_hash, store.now_ms(), envelope.encode(),
            ),
        )  # fmt: skip
    # After the endorsement is written: a crash between the two leaves the crystal to be marked
    # when the endorsement comes again (marking is idempotent).
    # Only a crystal holding exactly the endorsed bytes (``skill_bytes``): memory's own hash would
    # also name every whitespace variant of them.
    crystal = await held_skill(store, endorsement.stable_skill_id, endorsement.content_hash)
    if crystal is not None:
        await mark_verified(store, crystal.content_hash, by=envelope.author.hex())


async def consume_endorsement(sink: MarketSink, received: Received) -> None:
    message = received.message
    assert isinstance(message, SkillEndorsement)
    await record_endorsement(sink.store(), message, received.envelope)
    sink.ingested["endorsements"] += 1
    log.info("p2p.skill_endorsed", skill=message.stable_skill_id, endorser=received.author.hex()[:16])


SPOKEN = MarketKind(ENDORSEMENT_KIND, consume_endorsement)
