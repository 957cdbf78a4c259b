"""The skill commands. Over the network (``SKILLS``, on the P2P part: it gossips through its host
and reads its trust levels): share, publish, list, revoke, endorse, bounties. On the node's own
ledger (``LEDGER``, also local without a daemon): record an execution, price a skill."""

from __future__ import annotations

from typing import Any

from node.commands.registry import CommandSet, HttpRoute
from node.commands.skills_requests import (
    BountyArgs,
    EndorseArgs,
    ListingsArgs,
    PageArgs,
    PublishArgs,
    RecordArgs,
    RevokeArgs,
    ShareArgs,
    SkillArgs,
    SkillLedgerHost,
    SkillsHost,
)
from node.runtime.actor import current_actor

SKILLS = CommandSet("p2p")
commands = SKILLS.command
LEDGER = CommandSet("skills")


@commands("skills.share", ShareArgs, route=HttpRoute("POST", "/v1/skills/{crystal_id}/share", "skills"))
async def share(p2p: SkillsHost, request: ShareArgs) -> dict[str, Any]:
    """Share a skill free (signed, gossiped)."""
    from node.commands import skills_gossip as gossip

    return await gossip.share(p2p, request)


@commands("skills.publish", PublishArgs, route=HttpRoute("POST", "/v1/skills/{crystal_id}/publish", "skills"))
async def publish(p2p: SkillsHost, request: PublishArgs) -> dict[str, Any]:
    """List a proven skill for sale."""
    from node.commands import skills_gossip as gossip

    return await gossip.publish(p2p, request)


@commands("skills.list", ListingsArgs, route=HttpRoute("GET", "/v1/skills", "skills"))
async def list_offers(p2p: SkillsHost, request: ListingsArgs) -> list[dict[str, Any]]:
    """What the network offers, a page at a time: by seller trust, then relevance."""
    from node.commands import skills_gossip as gossip

    return await gossip.list_offers(p2p, request)


@commands("skills.revoke", RevokeArgs, route=HttpRoute("POST", "/v1/skills/revoke", "skills"))
async def revoke(p2p: SkillsHost, request: RevokeArgs) -> dict[str, Any]:
    """Revoke a skill this node published."""
    from node.commands import skills_gossip as gossip

    return await gossip.revoke(p2p, request)


@commands("skills.endorse", EndorseArgs, route=HttpRoute("POST", "/v1/skills/endorsements", "skills"))
async def endorse(p2p: SkillsHost, request: EndorseArgs) -> dict[str, Any]:
    """Endorse a listing (management nodes)."""
    from node.commands import skills_gossip as gossip

    return await gossip.endorse(p2p, request)


@commands("bounties.post", BountyArgs, route=HttpRoute("POST", "/v1/bounties", "skills"))
async def post_bounty(p2p: SkillsHost, request: BountyArgs) -> dict[str, Any]:
    """Ask the network for a skill."""
    from node.commands import skills_gossip as gossip

    return await gossip.post_bounty(p2p, request)


@commands("bounties.list", PageArgs, route=HttpRoute("GET", "/v1/bounties", "skills"))
async def list_bounties(p2p: SkillsHost, request: PageArgs) -> list[dict[str, Any]]:
    """Live bounties, a page at a time."""
    from node.commands import skills_gossip as gossip

    return await gossip.list_bounties(p2p, request)


@LEDGER.command(
    "skills.record", RecordArgs, route=HttpRoute("POST", "/v1/skills/{crystal_id}/executions", "skills"), local=True
)
async def record(ledger: SkillLedgerHost, request: RecordArgs) -> dict[str, Any]:
    """Record an execution.

    One execution of a local skill by the agent, with its reward (default 1 on success, else 0)."""
    from node.commands.skills_service import record_report

    reward = request.reward if request.reward is not None else (1.0 if request.success else 0.0)
    return await record_report(
        ledger.store(), request.crystal_id, success=request.success, reward_milli=round(reward * 1000),
        actor=current_actor(),
    )  # fmt: skip


@LEDGER.command(
    "skills.price", SkillArgs, route=HttpRoute("GET", "/v1/skills/{crystal_id}/price", "skills"), local=True
)
async def price(ledger: SkillLedgerHost, request: SkillArgs) -> dict[str, Any]:
    """The price of a local skill.

    Every factor of the price this node would ask, and whether it may be listed."""
    from node.commands.skills_service import price_report

    reputation, me = await ledger.reputation()
    return await price_report(
        ledger.store(), request.crystal_id, ledger.price_settings(), reputation_milli=reputation, me=me
    )
