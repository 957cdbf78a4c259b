"""The local skill operations the daemon's command table and the CLI (without a daemon) share:
JSON-shaped answers, so a command answers alike either way (as ``memory.service`` for memory)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from marketplace.catalog.bounties import answered_bounty, with_answered_bounties
from marketplace.executions import executions_per_crystal, inherit_executions, record_execution
from marketplace.offer import price_of
from marketplace.pricing import PriceSettings, format_usdc
from marketplace.quality import refusals
from memory.emerging.patterns import EmergingSkill, bounty_first
from memory.emerging.practice import crystallise, emerging_skills, find, skill_text
from memory.intake.store import IntakeStore
from memory.storage.store import MemoryStore
from memory.transfer.records import crystal_fields
from node.config import MarketplaceSection


def price_settings(market: MarketplaceSection) -> PriceSettings:
    return PriceSettings(market.base_price_micro_usdc, market.min_price_micro_usdc, market.max_price_micro_usdc)


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


async def crystallise_report(store: IntakeStore, skill_id: str, text: str | None, *, actor: str) -> dict[str, Any]:
    """Promote an emerging skill: a new skill crystal derived from its practices, which are frozen."""
    pattern = find(await emerging_skills(store, await executions_per_crystal(store)), skill_id)
    from node.actor import speaker_of

    typical = await store.get(pattern.typical_id)
    bounty = await answered_bounty(
        store, text=skill_text(typical, text), tags=typical.tags, category="", now_ms=store.now_ms()
    )
    skill, frozen = await crystallise(store, pattern, text=text, actor=actor, speaker=speaker_of(actor), bounty=bounty)
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
