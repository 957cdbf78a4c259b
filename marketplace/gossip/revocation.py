"""Skill revocations, the home of their gossip kind: a publisher (or a management key) withdraws
every version of one of its skills.

Here are the message (``SkillRevocation``, described once by ``REVOCATION``), who may send one
(``admit_revocation``) and what this node does with it (``consume_revocation``: the catalogue's
listings are marked revoked, and the crystals the publisher's versions became are deprecated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crypto.envelope import Envelope
from ground.wire import Wire, ident, key, words
from marketplace.gossip.peer_content import peer_source
from marketplace.gossip.sink import MarketKind, MarketSink, log
from memory.storage.crystal_queries import deprecate_skill_versions
from memory.storage.store import MemoryStore
from p2p.kinds import Gate, GossipKind, Lane, Received, Refusal
from p2p.topics import SKILLS_TOPIC
from p2p.verdicts import Reason

KIND_SKILL_REVOCATION = "skill.revocation"


@dataclass(frozen=True, slots=True)
class SkillRevocation:
    stable_skill_id: str
    publisher: bytes  # the original author's public key (a management key may revoke for it)
    reason: str


REVOCATION = Wire(SkillRevocation, {"stable_skill_id": ident(), "publisher": key(), "reason": words(280)})


def admit_revocation(gate: Gate, envelope: Envelope, message: Any, now_ms: int) -> Refusal | None:
    assert isinstance(message, SkillRevocation)
    if envelope.author == message.publisher or gate.is_management(envelope.author):
        return None
    return Refusal(Reason.NOT_PUBLISHER, "only the publisher or a management key may revoke")


REVOCATION_KIND = GossipKind(KIND_SKILL_REVOCATION, SKILLS_TOPIC, REVOCATION, Lane.CONTROL, admit_revocation)


async def revoke_listing(store: MemoryStore, revocation: SkillRevocation) -> int:
    async with store.transaction() as db:
        cursor = await db.execute(
            "UPDATE listings SET revoked = 1 WHERE seller = ? AND stable_skill_id = ?",
            (revocation.publisher.hex(), revocation.stable_skill_id),
        )
        count = int(cursor.rowcount)
        await cursor.close()
    return count


async def apply_revocation(store: MemoryStore, revocation: SkillRevocation) -> int:
    """Deprecate every version of the skill from its publisher; returns how many crystals."""
    return await deprecate_skill_versions(
        store, revocation.stable_skill_id, peer_source(revocation.publisher), by="revoked"
    )


async def consume_revocation(sink: MarketSink, received: Received) -> None:
    message = received.message
    assert isinstance(message, SkillRevocation)
    await revoke_listing(sink.store(), message)
    count = await apply_revocation(sink.store(), message)
    sink.ingested["revocations"] += 1
    log.info("p2p.skill_revoked", skill=message.stable_skill_id, crystals=count)


SPOKEN = MarketKind(REVOCATION_KIND, consume_revocation)
