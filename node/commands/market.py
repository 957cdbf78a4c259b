"""The market commands, run on the market part: buying a listed skill, the wallet, dev funds."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field, field_validator

from ground.authority import Capability, Speaker
from marketplace.pricing import format_usdc, parse_usdc
from node.actor import current_speaker
from node.commands.registry import CommandSet, HttpRoute, McpSpec, NoArgs, Request
from node.commands.texts import agent
from node.commands.texts import market as text
from node.commands.texts.cli_form import CliSpec


class MarketHost(Protocol):
    """What the market commands call: ``marketplace.desk.service.MarketDesk``, which the market part builds."""

    async def buy_listing(self, listing: str, max_price: str | None, speaker: Speaker) -> dict[str, Any]: ...

    async def wallet_report(self) -> dict[str, Any]: ...

    async def deals_report(self, limit: int) -> dict[str, Any]: ...

    async def fund_wallet(self, usdc: str) -> dict[str, Any]: ...

    async def withdraw(self, usdc: str | None) -> dict[str, Any]: ...

    async def dispute(self, purchase_id: str) -> dict[str, Any]: ...

    async def evidence(self, purchase_id: str) -> dict[str, Any]: ...

    async def arbitrate(self, purchase_id: str) -> dict[str, Any]: ...


def _usdc(text: str | None) -> str | None:
    """An amount of USDC as a person writes it ("0.05"), refused here when it is not one."""
    if text is not None:
        parse_usdc(text)  # its ValueError names the problem; pydantic names the field
    return text


class BuyArgs(Request):
    listing: str = Field(min_length=1, max_length=200, description="A skill id, or SELLER_PEER_ID/SKILL_ID.")
    max_price: str | None = Field(
        default=None,
        max_length=32,
        description=(
            "Refuse a listing dearer than this many USDC, e.g. 0.05. "
            "Above [marketplace] max_purchase_micro_usdc: the person's alone."
        ),
    )

    @field_validator("max_price")
    @classmethod
    def _max_price_is_usdc(cls, text: str | None) -> str | None:
        return _usdc(text)


class FundArgs(Request):
    amount: str = Field(min_length=1, max_length=32, description="USDC to mint on a dev chain, e.g. 10.")

    @field_validator("amount")
    @classmethod
    def _amount_is_usdc(cls, text: str) -> str:
        return str(_usdc(text))


class WithdrawArgs(Request):
    amount: str | None = Field(
        default=None, max_length=32, description="USDC to withdraw, e.g. 2.5; all that is owed if omitted."
    )


class PurchaseArgs(Request):
    purchase_id: str = Field(min_length=64, max_length=64, description="A purchase id, as `wallet` lists them.")


MARKET = CommandSet("market")
commands = MARKET.command


@commands(
    "skills.buy",
    BuyArgs,
    route=HttpRoute("POST", "/v1/skills/buy", "skills"),
    timeout_s=180,
    cli=CliSpec("skills", "buy", arguments=("listing",), render=text.bought, exit_code=text.bought_exit),
    needs=Capability.SPEND_WITHIN_BUDGET,
)
async def buy(market: MarketHost, request: BuyArgs) -> dict[str, Any]:
    """Buy a listed skill: LISTING is its skill id, or SELLER_PEER_ID/SKILL_ID when several sell it. Asks the
    seller for a signed quote, locks the price in escrow, receives the skill encrypted to this node, checks it
    against the signed listing, stores it, and releases the payment."""
    return await market.buy_listing(request.listing, request.max_price, current_speaker())


@commands(
    "wallet",
    NoArgs,
    route=HttpRoute("GET", "/v1/wallet", "market"),
    cli=CliSpec("", "wallet", is_group=True, render=text.wallet),
    mcp=McpSpec("wallet_show", shape=agent.without_sellers_words),
    needs=Capability.READ,
)
async def wallet(market: MarketHost, request: NoArgs) -> dict[str, Any]:
    """This node's USDC wallet and earnings ledger (through the running daemon)."""
    return await market.wallet_report()


class DealsArgs(Request):
    limit: int = Field(default=20, ge=1, le=500, description="How many of the latest purchases and of sales.")


def _deals(doc: dict[str, Any], _: Any) -> str:
    lines = []
    for role, rows in (("purchase", doc["purchases"]), ("sale", doc["sales"])):
        for row in rows:
            mark = "STUCK " if row["stuck"] else ""
            lines.append(f"{mark}{role} {row['purchase_id'][:16]}…  {row['skill']}  {row['state']}: {row['advice']}")
            if row.get("held"):  # where a bought skill went: held for review, and how to release it
                lines.append(f"  {row['held']['says']}")
    return "\n".join(lines) or "no purchases or sales yet"


@commands(
    "skills.purchases",
    DealsArgs,
    route=HttpRoute("GET", "/v1/skills/purchases", "skills"),
    cli=CliSpec("skills", "purchases", render=_deals),
    mcp=McpSpec("skills_purchases", shape=agent.without_sellers_words),
    needs=Capability.READ,
)
async def purchases(market: MarketHost, request: DealsArgs) -> dict[str, Any]:
    """This node's purchases and sales: where each stands and what comes next."""
    return await market.deals_report(request.limit)


@commands(
    "wallet.fund",
    FundArgs,
    route=HttpRoute("POST", "/v1/wallet/fund", "market"),
    timeout_s=60,
    cli=CliSpec("wallet", "fund", arguments=("amount",), render=text.funded),
    needs=Capability.RUN_NODE,
)
async def fund(market: MarketHost, request: FundArgs) -> dict[str, Any]:
    """Mint AMOUNT development USDC (and gas) to this wallet: development chains only."""
    return await market.fund_wallet(request.amount)


def _withdrawn(doc: dict[str, Any], _: Any) -> str:
    return (
        f"withdrew {format_usdc(doc['withdrawn_micro_usdc'])}; "
        f"the wallet holds {format_usdc(doc['balance_micro_usdc'])}, "
        f"the escrow still owes {format_usdc(doc['owed_micro_usdc'])}"
    )


@commands(
    "wallet.withdraw",
    WithdrawArgs,
    route=HttpRoute("POST", "/v1/wallet/withdraw", "market"),
    timeout_s=60,
    cli=CliSpec("wallet", "withdraw", options={"amount": "--usdc"}, render=_withdrawn),
    needs=Capability.RUN_NODE,
)
async def withdraw(market: MarketHost, request: WithdrawArgs) -> dict[str, Any]:
    """Move paid sales the escrow holds into this wallet."""
    return await market.withdraw(request.amount)


@commands(
    "skills.dispute",
    PurchaseArgs,
    route=HttpRoute("POST", "/v1/skills/dispute", "skills"),
    timeout_s=60,
    cli=CliSpec(
        "skills", "dispute", arguments=("purchase_id",), render=lambda doc, _: f"{doc['state']}: {doc['detail']}"
    ),
    needs=Capability.WRITE,
)
async def dispute(market: MarketHost, request: PurchaseArgs) -> dict[str, Any]:
    """Contest a seller's committed delivery (the escrow's arbiter decides)."""
    return await market.dispute(request.purchase_id)


@commands(
    "skills.evidence",
    PurchaseArgs,
    route=HttpRoute("GET", "/v1/skills/evidence", "skills"),
    cli=CliSpec("skills", "evidence", arguments=("purchase_id",), render=lambda doc, _: str(doc["summary"])),
    needs=Capability.READ,
)
async def evidence(market: MarketHost, request: PurchaseArgs) -> dict[str, Any]:
    """What the chain holds of a deal, and the arbiter's verdict it leads to."""
    return await market.evidence(request.purchase_id)


@commands(
    "skills.arbitrate",
    PurchaseArgs,
    route=HttpRoute("POST", "/v1/skills/arbitrate", "skills"),
    timeout_s=60,
    cli=CliSpec(
        "skills", "arbitrate", arguments=("purchase_id",), render=lambda doc, _: f"to the {doc['to']}: {doc['why']}"
    ),
    needs=Capability.ADMINISTER,
)
async def arbitrate(market: MarketHost, request: PurchaseArgs) -> dict[str, Any]:
    """Decide an answered dispute from the chain, as the escrow's arbiter."""
    return await market.arbitrate(request.purchase_id)
