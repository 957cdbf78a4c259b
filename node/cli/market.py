"""`bitterbot-node skills record|price|buy`, `wallet`, `chain deploy`: the marketplace from the shell.

``record`` and ``price`` open the memory file directly (safe beside a running daemon),
like the memory commands; buying and the wallet go through the daemon, which owns the
chain client; ``chain deploy`` talks to a development chain directly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from marketplace.pricing import format_usdc, parse_usdc
from node.cli.common import handles_errors, location_options, resolve
from node.cli.network import skills_group
from node.cli.transport import run_command
from node.errors import UsageError

if TYPE_CHECKING:  # the store and the market's queries load only when a command runs on the file itself
    pass


@skills_group.command("record")
@location_options
@click.argument("crystal_id")
@click.option("--success/--failure", "success", required=True, help="How the execution went.")
@click.option("--reward", type=click.FloatRange(0, 1), default=None, help="Reward score in [0, 1] (default 1 / 0).")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_record(
    config_path: Path | None, data_dir: Path | None, crystal_id: str, success: bool, reward: float | None, as_json: bool
) -> None:
    """Record an execution of a skill by the local agent (the quality gate and price use these)."""
    args = {"crystal_id": crystal_id, "success": success, "reward": reward}  # no reward: 1 on success, else 0
    doc = run_command(config_path, data_dir, "skills.record", args)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        state = "listable" if doc["listable"] else "not listable yet: " + "; ".join(doc["reasons"])
        click.echo(f"recorded: {doc['successes']} of {doc['executions']} succeeded ({state})")


@skills_group.command("price")
@location_options
@click.argument("crystal_id")
@click.option("--explain", is_flag=True, help="Show every factor.")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_price(
    config_path: Path | None, data_dir: Path | None, crystal_id: str, explain: bool, as_json: bool
) -> None:
    """The USDC price this node would ask for a skill, and whether it may be listed."""
    market = resolve(config_path, data_dir)[0].config.marketplace

    doc = run_command(config_path, data_dir, "skills.price", {"crystal_id": crystal_id})
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    verdict = "listable" if doc["listable"] else "not listable: " + "; ".join(doc["not_listable_because"])
    click.echo(f"{format_usdc(doc['price_micro_usdc'])}  ({verdict})")
    if explain:
        f, i = doc["factors"], doc["inputs"]
        click.echo(f"  base        {format_usdc(f['base_micro_usdc'])}")
        click.echo(
            f"  quality     {f['quality']}  = success rate {f['success_rate']} x average reward {f['average_reward']}"
        )
        click.echo(
            f"  demand      {f['demand']}  = 1 + ln({i['unique_buyers']} buyers"
            f" + {i['bounty_matches']} bounties + 1) x 0.1"
        )
        click.echo(
            f"  reputation  {f['reputation']}  = 0.5 + {i['seller_reputation_milli'] / 1000} (how peers rate this node)"
        )
        click.echo(
            f"  scarcity    {f['scarcity']}  ({f['scarcity_class']}:"
            f" {i['category_listings_seen']} listings of its category seen)"
        )
        clamp = (
            f"  clamped to [{format_usdc(market.min_price_micro_usdc)}, {format_usdc(market.max_price_micro_usdc)}]"
            if f["clamped"]
            else ""
        )
        click.echo(f"  = {format_usdc(f['unclamped_micro_usdc'])}{clamp}")


@skills_group.command("buy")
@location_options
@click.argument("listing")
@click.option("--max-price", default=None, help="Refuse if the listing asks more than this many USDC (like 0.05).")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_buy(
    config_path: Path | None, data_dir: Path | None, listing: str, max_price: str | None, as_json: bool
) -> None:
    """Buy a listed skill: LISTING is its skill id, or SELLER_PEER_ID/SKILL_ID when several sell it.

    Asks the seller for a signed quote, locks the price in escrow, receives the skill encrypted
    to this node, checks it against the signed listing, stores it, and releases the payment.
    """
    if max_price is not None:
        try:
            parse_usdc(max_price)
        except ValueError as exc:
            raise UsageError(f"--max-price: {exc}") from None
    result = run_command(config_path, data_dir, "skills.buy", {"listing": listing, "max_price": max_price})
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    price = format_usdc(result["price_micro_usdc"])
    if result["state"] == "completed":
        click.echo(f"bought {result['stable_skill_id']} for {price}: stored as crystal {result['crystal_id']}")
    else:
        click.echo(f"purchase {result['purchase_id'][:16]}… {result['state']} ({price}): {result['detail']}")
        raise SystemExit(1)


@click.group("wallet", invoke_without_command=True)
@location_options
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
@handles_errors
def wallet_group(ctx: click.Context, config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """This node's USDC wallet and earnings ledger (through the running daemon)."""
    if ctx.invoked_subcommand is not None:
        return
    doc = run_command(config_path, data_dir, "wallet")
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(format_wallet(doc))


def _short(micro: int) -> str:
    """USDC to three places, by integer arithmetic (display only; amounts stay integers)."""
    return f"{micro // 1_000_000}.{(micro % 1_000_000) // 1000:03d}"


def format_wallet(doc: dict[str, Any]) -> str:
    led = doc["ledger"]
    balance = "unknown" if doc["balance_micro_usdc"] is None else format_usdc(doc["balance_micro_usdc"])
    lines = [
        f"address   {doc['address']} on {doc['chain']}",
        f"balance   {balance}" + (f"  (chain: {doc['chain_error']})" if doc.get("chain_error") else ""),
        f"owed      {'unknown' if doc.get('owed_micro_usdc') is None else format_usdc(doc['owed_micro_usdc'])}"
        " by the escrow for paid sales (`wallet withdraw`)",
        f"earned    {format_usdc(led['earned_micro_usdc'])} from {led['sales']} sales to {led['unique_buyers']} buyers"
        f" (+{format_usdc(led['pending_micro_usdc'])} delivered, awaiting release)",
        f"spent     {format_usdc(led['spent_micro_usdc'])} on {led['purchases']} skills",
        f"listed    {led['listed_skills']} skills",
    ]
    if led["top_skills"]:
        lines.append("top skills")
        lines += [
            f"  {s['stable_skill_id']}: {s['sales']} sales, {format_usdc(s['earned_micro_usdc'])}"
            for s in led["top_skills"]
        ]
    lines.append(
        "last 7 days (earned/spent)  "
        + "  ".join(
            f"{d['day'][5:]} {_short(d['earned_micro_usdc'])}/{_short(d['spent_micro_usdc'])}" for d in led["trend"]
        )
    )
    for p in doc["recent_purchases"][:5]:
        lines.append(f"purchase {p['purchase_id'][:16]}… {p['state']}" + (f": {p['detail']}" if p["detail"] else ""))
    return "\n".join(lines)


@wallet_group.command("fund")
@location_options
@click.argument("amount")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def wallet_fund(config_path: Path | None, data_dir: Path | None, amount: str, as_json: bool) -> None:
    """Mint AMOUNT development USDC (and gas) to this wallet: development chains only."""
    try:
        parse_usdc(amount)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    doc = run_command(config_path, data_dir, "wallet.fund", {"amount": amount})
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f"{doc['address']} now holds {format_usdc(doc['balance_micro_usdc'])}")


@click.group("chain")
def chain_group() -> None:
    """The chain purchases settle on."""


@chain_group.command("deploy")
@click.option("--url", required=True, help="A local development chain's JSON-RPC URL (anvil: http://127.0.0.1:8545).")
@click.option(
    "--arbiter",
    required=True,
    help="The address that decides disputes: a key you chose (a management node's wallet), never a dev account.",
)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def chain_deploy(url: str, arbiter: str, as_json: bool) -> None:
    """Deploy our DevUSDC token and escrow on a development chain and print the [chain] config for it.

    Uses the chain's first unlocked account (anvil has ten), which becomes the token's minter. The
    escrow's arbiter is --arbiter (a management node's wallet: it decides disputes); an unlocked or
    publicly known development account is refused. Every node that should trade with the others
    gets the same lines.
    """
    import asyncio

    from marketplace.chain import Chain
    from marketplace.errors import ChainError

    async def deploy() -> tuple[str, str]:
        chain = await Chain.rpc_dev(url, arbiter=arbiter)
        try:
            return chain.token_address, chain.escrow_address
        finally:
            await chain.close()

    try:
        token, escrow = asyncio.run(deploy())
    except (ChainError, ValueError) as exc:
        raise UsageError(f"could not deploy on {url}: {exc}") from None
    if as_json:
        doc = {"url": url, "token_address": token, "escrow_address": escrow, "dev": True}
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(f'[chain]\nurl = "{url}"\ntoken_address = "{token}"\nescrow_address = "{escrow}"\ndev = true')
