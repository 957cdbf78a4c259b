"""`bitterbot-node peers|connect|weather|skills share|revoke`: the network, through the running daemon."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from marketplace.pricing import format_usdc
from memory.errors import InvalidQuery
from memory.retrieval.query import parse_since
from node.cli.common import handles_errors, location_options
from node.cli.transport import run_command
from node.errors import UsageError


def _when(ms: int | None) -> str:
    return "-" if ms is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


@click.command("peers")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def peers(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Connected and known peers: trust level, local/global/combined trust, penalties."""
    rows = run_command(config_path, data_dir, "peers")
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no peers yet")
    for r in rows:
        state = (
            "connected"
            if r["connected"]
            else ("banned until " + _when(r["banned_until_ms"]) if r["banned_until_ms"] else "known")
        )
        click.echo(
            f"{r['peer_id']}  {r['level']:<11} combined {r['combined']:.2f} (local {r['local']:.2f}, "
            f"global {r['global']:.2f})  penalty {r['penalty_points']:.0f}  {state}"
        )


@click.command("connect")
@location_options
@click.argument("address")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def connect(config_path: Path | None, data_dir: Path | None, address: str, as_json: bool) -> None:
    """Dial a peer now, by its full multiaddr (/ip4/…/tcp/…/p2p/12D3KooW…)."""
    result = run_command(config_path, data_dir, "p2p.connect", {"address": address})
    click.echo(json.dumps(result, indent=2) if as_json else f"connected to {result['peer_id']}")


@click.group("weather")
def weather_group() -> None:
    """Network cortisol weather: signed by management nodes, obeyed by every node."""


@weather_group.command("broadcast")
@location_options
@click.option("--level", type=click.FloatRange(0, 1), required=True, help="Cortisol level, 0 ends a weather.")
@click.option("--duration", required=True, help="How long it lasts: 30s, 5m, 2h.")
@click.option("--reason", required=True)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def weather_broadcast(
    config_path: Path | None, data_dir: Path | None, level: float, duration: str, reason: str, as_json: bool
) -> None:
    """Sign and gossip a weather event (management nodes only)."""
    try:
        duration_ms = -parse_since(duration, 0)
    except InvalidQuery as exc:
        raise UsageError(str(exc)) from None
    if duration_ms < 1_000:
        raise UsageError("--duration must be at least 1s")
    result = run_command(
        config_path,
        data_dir,
        "weather.broadcast",
        {"level": level, "duration_s": duration_ms // 1000, "reason": reason},
    )
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(f"weather {result['level']} broadcast until {_when(result['until_ms'])} (seq {result['seq']})")


@weather_group.command("show")
@location_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def weather_show(config_path: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """The weather this node obeys now."""
    result = run_command(config_path, data_dir, "weather.show")
    if as_json:
        click.echo(json.dumps(result, indent=2))
    elif not result["active"]:
        click.echo("clear: no network weather")
    else:
        click.echo(
            f"cortisol {result['level']} until {_when(result['until_ms'])}: {result['reason']} "
            f"(untrusted ingestion {'halted' if result['halts_untrusted_ingestion'] else 'open'})"
        )


@click.group("skills")
def skills_group() -> None:
    """Share and revoke skills on the network."""


@skills_group.command("share")
@location_options
@click.argument("crystal_id")
@click.option("--title", default=None)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_share(
    config_path: Path | None, data_dir: Path | None, crystal_id: str, title: str | None, as_json: bool
) -> None:
    """Gossip a local skill (a skill or task-pattern crystal) to the network, free."""
    result = run_command(config_path, data_dir, "skills.share", {"crystal_id": crystal_id, "title": title})
    click.echo(json.dumps(result, indent=2) if as_json else f"shared {result['stable_skill_id']} v{result['version']}")


@skills_group.command("revoke")
@location_options
@click.argument("stable_skill_id")
@click.option("--reason", default="revoked by its publisher")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_revoke(
    config_path: Path | None, data_dir: Path | None, stable_skill_id: str, reason: str, as_json: bool
) -> None:
    """Revoke a skill this node published: every node marks it deprecated."""
    result = run_command(config_path, data_dir, "skills.revoke", {"stable_skill_id": stable_skill_id, "reason": reason})
    click.echo(json.dumps(result, indent=2) if as_json else f"revoked {result['stable_skill_id']}")


@skills_group.command("publish")
@location_options
@click.argument("crystal_id")
@click.option("--title", default=None)
@click.option("--description", default=None)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_publish(
    config_path: Path | None,
    data_dir: Path | None,
    crystal_id: str,
    title: str | None,
    description: str | None,
    as_json: bool,
) -> None:
    """List a proven skill for sale: the quality gate, the price, a signed listing on the network."""
    result = run_command(
        config_path, data_dir, "skills.publish", {"crystal_id": crystal_id, "title": title, "description": description}
    )
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(
            f"listed {result['stable_skill_id']} v{result['version']} at {format_usdc(result['price_micro_usdc'])}"
            f" (paid to {result['seller_address']})"
        )


def page_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--offset", type=click.IntRange(0, 1_000_000), default=0, help="Rows to skip.")(func)
    return click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True, help="Rows to show.")(
        func
    )


@skills_group.command("list")
@location_options
@click.argument("query", required=False, default="")
@page_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_list(
    config_path: Path | None, data_dir: Path | None, query: str, limit: int, offset: int, as_json: bool
) -> None:
    """What the network offers (or what matches QUERY): skill, price, seller and the seller's trust level.
    Sellers trusted here come first, then the most relevant, then the newest."""
    rows = run_command(config_path, data_dir, "skills.list", {"query": query, "limit": limit, "offset": offset})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no listings seen yet" if not (query or offset) else "no more listings")
    for r in rows:
        mark = " [verified]" if r["verified"] else ""
        mine = " (mine)" if r["mine"] else ""
        price = format_usdc(r["price_micro_usdc"])
        click.echo(
            f"{r['stable_skill_id']} v{r['version']}  {price}  {r['title'][:60]}{mark}{mine}\n"
            f"    seller {r['seller_peer_id']} ({r['seller_level']}), {r['successes']}/{r['executions']} executions ok"
        )
        for b in r["bounties"]:
            click.echo(
                f"    answers bounty {b['bounty_id']} ({format_usdc(b['reward_micro_usdc'])}): {b['description'][:70]}"
            )
    if len(rows) == limit:
        click.echo(f"(more with --offset {offset + limit})")


@skills_group.command("endorse")
@location_options
@click.argument("listing")
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_endorse(config_path: Path | None, data_dir: Path | None, listing: str, as_json: bool) -> None:
    """Vouch for a seller's listed skill as a management node: LISTING is SELLER_PEER_ID/SKILL_ID.

    Every node then marks that version [verified]; a newer version needs a new endorsement.
    """
    result = run_command(config_path, data_dir, "skills.endorse", {"listing": listing})
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    click.echo(f"endorsed {result['stable_skill_id']} v{result['version']} ({result['content_hash'][:16]}…)")


@skills_group.command("bounty")
@location_options
@click.argument("description")
@click.option("--reward", required=True, help="USDC offered, like 0.5.")
@click.option("--tag", "tags", multiple=True, help="A tag a matching skill may carry (repeatable).")
@click.option("--category", default="", help="The category a matching skill may have.")
@click.option("--days", type=click.FloatRange(0, 30, min_open=True), default=7.0, help="How long it stands (<= 30).")
@click.option(
    "--id", "bounty_id", default=None, help="Re-issue an existing bounty of this node (new reward or expiry)."
)
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_bounty(
    config_path: Path | None,
    data_dir: Path | None,
    description: str,
    reward: str,
    tags: tuple[str, ...],
    category: str,
    days: float,
    bounty_id: str | None,
    as_json: bool,
) -> None:
    """Ask the network for a skill: a signed bounty with the reward offered.

    Listings that answer it (same category, a shared tag, or its words) are shown first
    in `skills list`, and their sellers' prices count the demand.
    """
    args = {"description": description, "reward": reward, "tags": list(tags), "category": category, "days": days,
            "bounty_id": bounty_id}  # fmt: skip
    result = run_command(config_path, data_dir, "bounties.post", args)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(
            f"bounty {result['bounty_id']} for {format_usdc(result['reward_micro_usdc'])} "
            f"until {_when(result['expires_ms'])}"
        )


@skills_group.command("bounties")
@location_options
@page_options
@click.option("--json", "as_json", is_flag=True)
@handles_errors
def skills_bounties(config_path: Path | None, data_dir: Path | None, limit: int, offset: int, as_json: bool) -> None:
    """Live bounties on the network: authors trusted here first, then the largest reward; with how many
    listings answer each."""
    rows = run_command(config_path, data_dir, "bounties.list", {"limit": limit, "offset": offset})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no live bounties")
    for b in rows:
        mine = " (mine)" if b["mine"] else ""
        click.echo(
            f"{b['bounty_id']}  {format_usdc(b['reward_micro_usdc'])}  until {_when(b['expires_ms'])}{mine}\n"
            f"    {b['description'][:100]}\n    {b['matching_listings']} matching listings, by {b['author_peer_id']}"
        )
