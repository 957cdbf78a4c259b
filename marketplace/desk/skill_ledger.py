"""The skill ledger's services (``node.commands.skills.LEDGER``), which the daemon's command table and
the CLI without a daemon share: JSON-shaped answers, so a command answers alike either way. Who
speaks is the handler's to say (``speaker``, ``actor``), never guessed here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any, Protocol

from ground.authority import Speaker
from marketplace.catalog.bounties import answered_bounty, with_answered_bounties
from marketplace.desk.offer import price_of
from marketplace.executions import executions_per_crystal, inherit_executions, record_execution
from marketplace.pricing import PriceSettings, format_usdc
from marketplace.quality import refusals
from memory.emerging.patterns import EmergingSkill, bounty_first
from memory.emerging.practice import crystallise, emerging_skills, find, skill_text
from memory.intake.store import IntakeStore
from memory.storage.store import MemoryStore
from memory.transfer.records import crystal_fields

#: How peers rate this node (thousandths) and its key hex: the live trust book's, or the files'.
Reputation = Callable[[], Awaitable[tuple[int, str | None]]]


class SkillRequest(Protocol):
    crystal_id: str


class RecordRequest(SkillRequest, Protocol):
    success: bool
    reward: float | None


class EmergingRequest(Protocol):
    limit: int


class CrystalliseRequest(Protocol):
    skill_id: str
    text: str | None


class SkillLedger:
    """What the skill ledger commands call: over the running store (``store`` raises while memory is
    not open), with this node's prices and how peers rate it."""

    def __init__(self, store: Callable[[], IntakeStore], prices: PriceSettings, reputation: Reputation) -> None:
        self._store = store
        self._prices = prices
        self._reputation = reputation

    async def record(self, request: RecordRequest, *, actor: str) -> dict[str, Any]:
        """Record one execution by ``actor``; with no reward given, a success scores 1 and a failure 0."""
        reward = request.reward if request.reward is not None else (1.0 if request.success else 0.0)
        return await record_report(
            self._store(), request.crystal_id, success=request.success, reward_milli=round(reward * 1000), actor=actor
        )

    async def price(self, request: SkillRequest) -> dict[str, Any]:
        """The price this node would ask for a local skill, every factor, and whether it may be listed."""
        reputation, me = await self._reputation()
        return await price_report(self._store(), request.crystal_id, self._prices, reputation_milli=reputation, me=me)

    async def emerging(self, request: EmergingRequest) -> dict[str, Any]:
        return await emerging_report(self._store(), request.limit)

    async def crystallise(self, request: CrystalliseRequest, *, actor: str, speaker: Speaker) -> dict[str, Any]:
        return await crystallise_report(self._store(), request.skill_id, request.text, actor=actor, speaker=speaker)


async def record_report(
    store: MemoryStore, crystal_id: str, *, success: bool, reward_milli: int, actor: str
) -> dict[str, Any]:
    """Record one execution of a local skill; the totals and whether the quality gate now lets it be listed."""
    stats = await record_execution(store, crystal_id, success=success, reward_milli=reward_milli, actor=actor)
    reasons = refusals(await store.get(crystal_id), stats)
    return {"executions": stats.executions, "successes": stats.successes, "listable": not reasons, "reasons": reasons}


async def price_report(
    store: MemoryStore, crystal_id: str, settings: PriceSettings, *, reputation_milli: int, me: str | None
) -> dict[str, Any]:
    """The price this node would ask for a local skill, every factor, and whether it may be listed."""
    crystal = await store.get(crystal_id)
    inputs, breakdown, _, reasons = await price_of(store, crystal, settings, reputation_milli=reputation_milli, me=me)
    return {
        "crystal_id": crystal.id,
        "price_micro_usdc": breakdown.price_micro_usdc,
        "price": format_usdc(breakdown.price_micro_usdc),
        "listable": not reasons,
        "not_listable_because": reasons,
        "inputs": asdict(inputs),
        "factors": breakdown.to_dict(),
    }


async def emerging_report(store: MemoryStore, limit: int) -> dict[str, Any]:
    """The task patterns becoming skills: those answering a live bounty first, then the most confident
    (``memory.emerging.patterns.bounty_first``)."""
    found = bounty_first(
        await with_answered_bounties(store, await emerging_skills(store, await executions_per_crystal(store)))
    )
    return {"emerging": [_emerging_json(s) for s in found[:limit]], "total": len(found)}


async def crystallise_report(
    store: IntakeStore, skill_id: str, text: str | None, *, actor: str, speaker: Speaker
) -> dict[str, Any]:
    """Promote an emerging skill: a new skill crystal derived from its practices, which are frozen
    (the authority table asks whether ``speaker`` may)."""
    pattern = find(await emerging_skills(store, await executions_per_crystal(store)), skill_id)
    typical = await store.get(pattern.typical_id)
    bounty = await answered_bounty(
        store, text=skill_text(typical, text), tags=typical.tags, category="", now_ms=store.now_ms()
    )
    skill, frozen = await crystallise(store, pattern, text=text, actor=actor, speaker=speaker, bounty=bounty)
    # The practices' runs are the new skill's: it need not be run three times more to be listed.
    runs = await inherit_executions(store, skill.id, pattern.crystal_ids)
    return {"skill": crystal_fields(skill), "from": _emerging_json(pattern), "frozen": frozen, "runs": runs}


def _emerging_json(skill: EmergingSkill) -> dict[str, Any]:
    return {
        "id": skill.id,
        "label": skill.label,
        "occurrences": skill.occurrences,
        "confidence": skill.confidence,
        "crystal_ids": list(skill.crystal_ids),
        "last_seen_ms": skill.last_seen_ms,
        "bounty": asdict(skill.bounty) if skill.bounty else None,
    }
