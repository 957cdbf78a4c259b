"""`bitterbot-node chain deploy`: our token and escrow on a development chain, talked to directly
(not a command of the node: no daemon or data dir is involved)."""

from __future__ import annotations

import json

import click

from node.cli.common import handles_errors
from node.errors import UsageError


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
@click.option(
    "--token",
    default=None,
    help="A USDC token already on the chain (0x...): deploy only the escrow, for that token (6 decimals).",
)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def chain_deploy(url: str, arbiter: str, token: str | None, as_json: bool) -> None:
    """Deploy our DevUSDC token and escrow on a development chain and print the [chain] config for it.

    Uses the chain's first unlocked account (anvil has ten), which becomes the token's minter. The
    escrow's arbiter is --arbiter (a management node's wallet: it decides disputes); an unlocked or
    publicly known development account is refused. Every node that should trade with the others
    gets the same lines.

    With --token, the token is the one already at that address (USDC, as on a test network): only
    the escrow is deployed, a token that does not count in 6 decimals is refused, and the config says
    dev = false (`wallet fund` cannot mint that token: get USDC from whoever holds it).
    """
    import asyncio

    from marketplace.chain import Chain
    from marketplace.deploy_policy import existing_token, usdc_like
    from marketplace.errors import ChainError

    async def deploy() -> tuple[str, str, str]:
        chain = await Chain.rpc_dev(url, arbiter=arbiter, token=None if token is None else existing_token(token))
        try:
            name = await chain.run(lambda: usdc_like(chain.w3, chain.token_address))
            return chain.token_address, chain.escrow_address, name
        finally:
            await chain.close()

    try:
        token_address, escrow, name = asyncio.run(deploy())
    except (ChainError, ValueError) as exc:
        raise UsageError(f"could not deploy on {url}: {exc}") from None
    dev = token is None  # our DevUSDC, which the chain's first account mints
    if as_json:
        doc = {"url": url, "token_address": token_address, "token_name": name, "escrow_address": escrow, "dev": dev}
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(
        f'[chain]\n# the token: {json.dumps(name)}\nurl = "{url}"\ntoken_address = "{token_address}"\n'
        f'escrow_address = "{escrow}"\ndev = {str(dev).lower()}'
    )
