"""The skill commands' requests, and what their handlers call: a marketplace service each
(described here as protocols, so the command table loads without the marketplace's modules)."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from ground.authority import Speaker
from node.commands.registry import Request


class SkillArgs(Request):
    crystal_id: str = Field(min_length=1, max_length=64)


class ShareArgs(SkillArgs):
    title: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=2_000)


class PublishArgs(ShareArgs):
    pass


class RecordArgs(SkillArgs):
    success: bool = Field(description="How the execution went.")
    reward: float | None = Field(default=None, ge=0, le=1, description="Reward score in [0, 1] (default 1 / 0).")


class EmergingArgs(Request):
    limit: int = Field(default=20, ge=1, le=200, description="How many, the most confident first.")


class CrystalliseArgs(Request):
    skill_id: str = Field(min_length=1, max_length=64, description="An emerging skill's id (or one of its crystals).")
    text: str | None = Field(
        default=None,
        min_length=1,
        max_length=10_000,
        description="The skill's text (default: its typical practice).",
    )


class PageArgs(Request):
    limit: int = Field(default=50, ge=1, le=500, description="Rows in this page.")
    offset: int = Field(default=0, ge=0, le=1_000_000, description="Rows of the ordering to skip.")


class ListingsArgs(PageArgs):
    query: str = Field(default="", max_length=500, description="Words to find in titles, descriptions, tags.")


class EndorseArgs(Request):
    listing: str = Field(min_length=1, max_length=200, description="SELLER_PEER_ID/SKILL_ID.")


class RevokeArgs(Request):
    stable_skill_id: str = Field(min_length=1, max_length=64)
    reason: str = Field(default="revoked", max_length=280)


class BountyArgs(Request):
    description: str = Field(min_length=1, max_length=2_000)
    reward: str = Field(min_length=1, max_length=32, description="USDC offered, e.g. 0.5.")
    tags: list[str] = Field(default_factory=list, max_length=16)
    category: str = Field(default="", max_length=64)
    days: float = Field(default=7.0, gt=0, le=30)
    bounty_id: str | None = Field(default=None, max_length=64)


class SkillsHost(Protocol):
    """What the network skill commands call (``marketplace.desk.skills.SkillDesk``)."""

    async def share(self, request: ShareArgs) -> dict[str, Any]: ...

    async def publish(self, request: PublishArgs, *, speaker: Speaker, actor: str) -> dict[str, Any]: ...

    async def list_offers(self, request: ListingsArgs) -> list[dict[str, Any]]: ...

    async def revoke(self, request: RevokeArgs) -> dict[str, Any]: ...

    async def endorse(self, request: EndorseArgs) -> dict[str, Any]: ...

    async def post_bounty(self, request: BountyArgs) -> dict[str, Any]: ...

    async def list_bounties(self, request: PageArgs) -> list[dict[str, Any]]: ...


class SkillLedgerHost(Protocol):
    """What the skill ledger commands call (``marketplace.desk.skill_ledger.SkillLedger``: the
    daemon's, or the local client's on the files)."""

    async def record(self, request: RecordArgs, *, actor: str) -> dict[str, Any]: ...

    async def price(self, request: SkillArgs) -> dict[str, Any]: ...

    async def emerging(self, request: EmergingArgs) -> dict[str, Any]: ...

    async def crystallise(self, request: CrystalliseArgs, *, actor: str, speaker: Speaker) -> dict[str, Any]: ...
