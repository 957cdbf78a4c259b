"""`bitterbot-node skills record|price`: executions and prices of local skills.

They open the memory file directly (safe beside a running daemon), like the memory
commands; publishing and buying go through the daemon.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from crypto.errors import KeyFileError
from crypto.identity import read_key_file_info
from marketplace.executions import record_execution
from marketplace.offer import price_of
from marketplace.pricing import PriceSettings, format_usdc
from marketplace.quality import refusals
from marketplace.reputation import NEUTRAL_MILLI, own_reputation_milli
from memory.store import MemoryStore
from node.cli import handles_errors, location_options, resolve
from node.errors import UsageError
from node.memory_cli import with_store
from node.p2p_cli import skills_group
from node.paths import NodePaths


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
    score = reward if reward is not None else (1.0 if success else 0.0)
    reward_milli = round(score * 1000)

    async def go(store: MemoryStore) -> dict[str, Any]:
        try:
            stats = await record_execution(store, crystal_id, success=success, reward_milli=reward_milli, actor="cli")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        crystal = await store.get(crystal_id)
        return {"executions": stats.executions, "successes": stats.successes, "listable": not refusals(crystal, stats),
                "reasons": refusals(crystal, stats)}  # fmt: skip

    doc = with_store(config_path, data_dir, go)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        state = "listable" if doc["listable"] else "not listable yet: " + "; ".join(doc["reasons"])
        click.echo(f"recorded: {doc['successes']} of {doc['executions']} succeeded ({state})")


def _reputation(paths: NodePaths) -> int:
    try:
        me = read_key_file_info(paths.key_file).public_key
    except KeyFileError:
        return NEUTRAL_MILLI
    assert paths.trust_file is not None
    return own_reputation_milli(paths.trust_file, me)


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
    loaded, paths = resolve(config_path, data_dir)
    m = loaded.config.marketplace
    settings = PriceSettings(m.base_price_micro_usdc, m.min_price_micro_usdc, m.max_price_micro_usdc)
    reputation = _reputation(paths)

    async def go(store: MemoryStore) -> dict[str, Any]:
        crystal = await store.get(crystal_id)
        inputs, breakdown, _, reasons = await price_of(store, crystal, settings, reputation_milli=reputation)
        return {
            "crystal_id": crystal_id,
            "price_micro_usdc": breakdown.price_micro_usdc,
            "price": format_usdc(breakdown.price_micro_usdc),
            "listable": not reasons,
            "not_listable_because": reasons,
            "inputs": asdict(inputs),
            "factors": breakdown.to_dict(),
        }  # fmt: skip

    doc = with_store(config_path, data_dir, go)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    verdict = "listable" if doc["listable"] else "not listable: " + "; ".join(doc["not_listable_because"])
    click.echo(f"{doc['price']}  ({verdict})")
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
            f"  clamped to [{format_usdc(m.min_price_micro_usdc)}, {format_usdc(m.max_price_micro_usdc)}]"
            if f["clamped"]
            else ""
        )
        click.echo(f"  = {format_usdc(f['unclamped_micro_usdc'])}{clamp}")
