"""The skill commands' requests, and what each kind of command needs of the part that runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pydantic import Field

from node.commands.registry import Request

if TYPE_CHECKING:
    from crypto.anchors import TrustAnchors
    from crypto.envelope import Envelope
    from marketplace.pricing import PriceSettings
    from memory.intake.store import IntakeStore
    from node.runtime.context import NodeContext
    from p2p.host import P2PHost
    from p2p.kinds import GossipKind
    from p2p.trust.book import TrustBook, TrustLevel


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
    """What the skills commands need of the part that gossips (``node.parts.p2p.P2PPart``)."""

    host: P2PHost | None
    trust: TrustBook

    @property
    def ctx(self) -> NodeContext: ...

    @property
    def anchors(self) -> TrustAnchors: ...

    def store(self) -> IntakeStore: ...

    def level_of_key(self, key: bytes) -> TrustLevel: ...

    async def publish(self, kind: GossipKind[Any], message: Any, *, now_ms: int | None = None) -> Envelope: ...


class SkillLedgerHost(Protocol):
    """What recording and pricing a local skill need: the store, and how peers rate this node.
    The daemon's P2P part, or the local client's files (the trust file the daemon keeps)."""

    def store(self) -> IntakeStore: ...

    def price_settings(self) -> PriceSettings: ...

    async def reputation(
        self,
    ) -> tuple[int, str | None]: ...  # (peers' rating of this node in thousandths, own key hex)
