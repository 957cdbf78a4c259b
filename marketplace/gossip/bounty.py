"""Skill bounties, the home of their gossip kind: a signed request for a skill, with the reward
offered for it.

Here are the message (``SkillBounty``, described once by ``BOUNTY``), when it is refused (an expiry
before its issue or more than 30 days after) and what this node does with one (``consume_bounty``:
kept, re-issued under the same id with a new reward or expiry, bounded per author and in total).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from crypto.envelope import Envelope
from ground.wire import Wire, ident, whole, words
from marketplace.gossip.listing import TAGS
from marketplace.gossip.received_quota import enforce_bound
from marketplace.gossip.sink import MarketKind, MarketSink
from memory.storage.store import MemoryStore
from p2p.kinds import Gate, GossipKind, Lane, Received, Refusal
from p2p.topics import BOUNTIES_TOPIC
from p2p.verdicts import Reason

KIND_BOUNTY = "bounty"
MAX_BOUNTY_S = 30 * 86_400


@dataclass(frozen=True, slots=True)
class SkillBounty:
    """A signed request for a skill: what is wanted, and the reward offered for it."""

    bounty_id: str
    description: str
    tags: tuple[str, ...]
    category: str
    reward_micro_usdc: int
    expires_ms: int


BOUNTY = Wire(
    SkillBounty,
    {
        "bounty_id": ident(),
        "description": words(2_000),
        "tags": TAGS,
        "category": words(64, empty=True),
        "reward_micro_usdc": whole(1, 10**12),
        "expires_ms": whole(0, 2**62),
    },
)


def admit_bounty(gate: Gate, envelope: Envelope, message: Any, now_ms: int) -> Refusal | None:
    assert isinstance(message, SkillBounty)
    if envelope.ts_ms < message.expires_ms <= envelope.ts_ms + MAX_BOUNTY_S * 1000:
        return None
    return Refusal(Reason.SCHEMA, f"a bounty expires after it is issued and within {MAX_BOUNTY_S // 86_400} days")


BOUNTY_KIND = GossipKind(KIND_BOUNTY, BOUNTIES_TOPIC, BOUNTY, Lane.BOUNTIES, admit_bounty)


async def record_bounty(store: MemoryStore, bounty: SkillBounty, envelope: Envelope) -> None:
    """Keep a bounty (its author may re-issue it with a new reward or expiry under the same id)."""
    async with store.transaction() as db:
        await db.execute(
            "INSERT INTO bounties (author, bounty_id, description, tags, category, reward_micro_usdc, expires_ms, "
            "received_ms, envelope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (author, bounty_id) DO UPDATE SET description = excluded.description, "
            "tags = excluded.tags, category = excluded.category, reward_micro_usdc = excluded.reward_micro_usdc, "
            "expires_ms = excluded.expires_ms, received_ms = excluded.received_ms, envelope = excluded.envelope",
            (
                envelope.author.hex(), bounty.bounty_id, bounty.description, json.dumps(list(bounty.tags)),
                bounty.category, bounty.reward_micro_usdc, bounty.expires_ms, store.now_ms(), envelope.encode(),
            ),
        )  # fmt: skip


async def consume_bounty(sink: MarketSink, received: Received) -> None:
    message = received.message
    assert isinstance(message, SkillBounty)
    await record_bounty(sink.store(), message, received.envelope)
    sink.ingested["bounties"] += 1
    sink.evicted["bounties"] += await enforce_bound(
        sink.store(), sink.bounties_bound, received.author.hex(), sink.standing_of, sink.me_hex
    )


SPOKEN = MarketKind(BOUNTY_KIND, consume_bounty)
