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
