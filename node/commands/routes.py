"""The local HTTP API's routes: path, method, the daemon command behind it, its request model.

One table, read by the server (``node.servers.api``) to dispatch and by the OpenAPI document to
describe; the CLI's client (``node.clients.daemon``) reads it to know where each command lives.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from node.commands.memory_requests import (
    BootstrapArgs,
    ConsolidateArgs,
    EventArgs,
    NoteArgs,
    QuarantineArgs,
    RememberArgs,
    SearchArgs,
)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ForgetQuery(_Body):
    reason: str = Field(default="forgotten by the agent", max_length=500)


class ShareArgs(_Body):
    title: str | None = Field(default=None, max_length=200)


class PageArgs(_Body):
    limit: int = Field(default=50, ge=1, le=500, description="Rows in this page.")
    offset: int = Field(default=0, ge=0, le=1_000_000, description="Rows of the ordering to skip.")


class ListingsArgs(PageArgs):
    query: str = Field(default="", max_length=500, description="Words to find in titles, descriptions, tags.")


class EndorseArgs(_Body):
    listing: str = Field(min_length=1, max_length=200, description="SELLER_PEER_ID/SKILL_ID.")


class ConnectArgs(_Body):
    address: str = Field(min_length=1, max_length=500, description="A multiaddr ending in /p2p/PEER_ID.")


class FundArgs(_Body):
    amount: str = Field(min_length=1, max_length=32, description="USDC to mint on a dev chain, e.g. 10.")


class BuyArgs(_Body):
    listing: str = Field(min_length=1, max_length=200, description="A skill id, or SELLER_PEER_ID/SKILL_ID.")
    max_price: str | None = Field(default=None, description="Refuse a listing dearer than this many USDC, e.g. 0.05.")


class RecordArgs(_Body):
    success: bool
    reward: float | None = Field(default=None, ge=0, le=1, description="Reward score in [0, 1] (default 1 / 0).")


class PublishArgs(_Body):
    title: str | None = Field(default=None, max_length=200)
    description: str | None = Field(default=None, max_length=2_000)


class RevokeArgs(_Body):
    stable_skill_id: str = Field(min_length=1, max_length=64)
    reason: str = Field(default="revoked", max_length=280)


class BountyArgs(_Body):
    description: str = Field(min_length=1, max_length=2_000)
    reward: str = Field(description="USDC offered, e.g. 0.5.")
    tags: list[str] = Field(default_factory=list, max_length=16)
    category: str = Field(default="", max_length=64)
    days: float = Field(default=7.0, gt=0, le=30)
    bounty_id: str | None = Field(default=None, max_length=64)


class WeatherArgs(_Body):
    level: float = Field(ge=0, le=1, description="Cortisol level; 0 ends a weather.")
    duration_s: int = Field(ge=1, le=7 * 86_400)
    reason: str = Field(min_length=1, max_length=280)


@dataclass(frozen=True, slots=True)
class Route:
    method: str
    path: str
    command: str
    summary: str
    body: type[BaseModel] | None = None  # JSON body (POST) or query string (GET/DELETE) model
    tag: str = "node"


ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/status", "status", "The node at a glance: identity, parts, memory, peers, weather, market."),
    Route("POST", "/v1/memory/search", "memory.search", "Search memory (every mode and filter).", SearchArgs, "memory"),
    Route("POST", "/v1/memory", "memory.remember", "Remember a text (stored once).", RememberArgs, "memory"),
    Route("GET", "/v1/memory/stats", "memory.stats", "Counts by lifecycle, type, origin; backlog.", tag="memory"),
    Route(
        "GET",
        "/v1/memory/quarantine",
        "memory.quarantine",
        "Peer content held back from the agent (or approved, rejected).",
        QuarantineArgs,
        "memory",
    ),
    Route("POST", "/v1/memory/{id}/approve", "memory.quarantine.approve", "Release held content.", tag="memory"),
    Route("POST", "/v1/memory/{id}/reject", "memory.quarantine.reject", "Reject held content.", tag="memory"),
    Route("GET", "/v1/memory/{id}", "memory.show", "One crystal with links, provenance, audit.", tag="memory"),
    Route("DELETE", "/v1/memory/{id}", "memory.forget", "Forget a crystal (audited).", ForgetQuery, "memory"),
    Route(
        "POST",
        "/v1/memory/consolidate",
        "memory.consolidate",
        "Run a consolidation cycle now.",
        ConsolidateArgs,
        "memory",
    ),
    Route("POST", "/v1/memory/{id}/unmerge", "memory.unmerge", "Undo a merge.", tag="memory"),
    Route("GET", "/v1/hormones", "memory.hormones", "The hormonal state.", tag="memory"),
    Route("POST", "/v1/hormones/events", "memory.event", "Tell the node what happened.", EventArgs, "memory"),
    Route(
        "POST",
        "/v1/working-memory/notes",
        "wm.note",
        "A working-memory note (durable, searchable).",
        NoteArgs,
        "working memory",
    ),
    Route(
        "GET",
        "/v1/working-memory/bootstrap",
        "wm.bootstrap",
        "The text for an agent's system prompt.",
        BootstrapArgs,
        "working memory",
    ),
    Route("POST", "/v1/working-memory/dream", "wm.dream", "Run the dream cycle now.", tag="working memory"),
    Route(
        "GET",
        "/v1/skills",
        "skills.list",
        "What the network offers, a page at a time: by seller trust, then relevance.",
        ListingsArgs,
        "skills",
    ),
    Route("GET", "/v1/skills/{crystal_id}/price", "skills.price", "The price of a local skill.", tag="skills"),
    Route("POST", "/v1/skills/{crystal_id}/executions", "skills.record", "Record an execution.", RecordArgs, "skills"),
    Route(
        "POST",
        "/v1/skills/{crystal_id}/publish",
        "skills.publish",
        "List a proven skill for sale.",
        PublishArgs,
        "skills",
    ),
    Route(
        "POST",
        "/v1/skills/{crystal_id}/share",
        "skills.share",
        "Share a skill free (signed, gossiped).",
        ShareArgs,
        "skills",
    ),
    Route(
        "POST",
        "/v1/skills/endorsements",
        "skills.endorse",
        "Endorse a listing (management nodes).",
        EndorseArgs,
        "skills",
    ),
    Route("POST", "/v1/skills/buy", "skills.buy", "Buy a listed skill.", BuyArgs, "skills"),
    Route("POST", "/v1/skills/revoke", "skills.revoke", "Revoke a skill this node published.", RevokeArgs, "skills"),
    Route("GET", "/v1/bounties", "bounties.list", "Live bounties, a page at a time.", PageArgs, "skills"),
    Route("POST", "/v1/bounties", "bounties.post", "Ask the network for a skill.", BountyArgs, "skills"),
    Route("GET", "/v1/peers", "peers", "Peers with trust levels.", tag="network"),
    Route("POST", "/v1/peers/connect", "p2p.connect", "Dial a peer by multiaddr.", ConnectArgs, "network"),
    Route("GET", "/v1/weather", "weather.show", "The weather this node obeys.", tag="network"),
    Route("POST", "/v1/weather", "weather.broadcast", "Broadcast weather (management nodes).", WeatherArgs, "network"),
    Route("GET", "/v1/wallet", "wallet", "Wallet, balance and earnings ledger.", tag="market"),
    Route(
        "POST", "/v1/wallet/fund", "wallet.fund", "Mint dev USDC to this wallet (dev chains only).", FundArgs, "market"
    ),
)
