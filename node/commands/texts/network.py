"""The network and skill commands' answers as a person reads them."""

from __future__ import annotations

import time
from typing import Any

from marketplace.pricing import format_usdc
from node.commands.texts.view import CliView


def when(ms: int | None) -> str:
    return "-" if ms is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


def peers(rows: list[dict[str, Any]], _: CliView) -> str:
    if not rows:
        return "no peers yet"
    lines = []
    for r in rows:
        banned = "banned until " + when(r["banned_until_ms"]) if r["banned_until_ms"] else "known"
        state = f"connected ({r.get('connection') or 'direct'})" if r["connected"] else banned
        lines.append(
            f"{r['peer_id']}  {r['level']:<11} combined {r['combined']:.2f} (local {r['local']:.2f}, "
            f"global {r['global']:.2f})  penalty {r['penalty_points']:.0f}  {state}"
        )
    return "\n".join(lines)


def connected(result: dict[str, Any], _: CliView) -> str:
    return f"connected to {result['peer_id']}"


def weather_sent(result: dict[str, Any], _: CliView) -> str:
    return f"weather {result['level']} broadcast until {when(result['until_ms'])} (seq {result['seq']})"


def weather_now(result: dict[str, Any], _: CliView) -> str:
    if not result["active"]:
        return "clear: no network weather"
    halted = "halted" if result["halts_untrusted_ingestion"] else "open"
    return (
        f"cortisol {result['level']} until {when(result['until_ms'])}: {result['reason']} "
        f"(untrusted ingestion {halted})"
    )


def shared(result: dict[str, Any], _: CliView) -> str:
    return f"shared {result['stable_skill_id']} v{result['version']}"


def revoked(result: dict[str, Any], _: CliView) -> str:
    return f"revoked {result['stable_skill_id']}"


def published(result: dict[str, Any], _: CliView) -> str:
    return (
        f"listed {result['stable_skill_id']} v{result['version']} at {format_usdc(result['price_micro_usdc'])}"
        f" (paid to {result['seller_address']})"
    )


def listings(rows: list[dict[str, Any]], view: CliView) -> str:
    request = view.request
    lines = []
    if not rows:
        lines.append("no listings seen yet" if not (request.query or request.offset) else "no more listings")
    for r in rows:
        mark = " [verified]" if r["verified"] else ""
        mine = " (mine)" if r["mine"] else ""
        price = format_usdc(r["price_micro_usdc"])
        lines.append(f"{r['stable_skill_id']} v{r['version']}  {price}  {r['title'][:60]}{mark}{mine}")
        lines.append(
            f"    seller {r['seller_peer_id']} ({r['seller_level']}), {r['successes']}/{r['executions']} executions ok"
        )
        lines += [
            f"    answers bounty {b['bounty_id']} ({format_usdc(b['reward_micro_usdc'])}): {b['description'][:70]}"
            for b in r["bounties"]
        ]
    if len(rows) == request.limit:
        lines.append(f"(more with --offset {request.offset + request.limit})")
    return "\n".join(lines)


def endorsed(result: dict[str, Any], _: CliView) -> str:
    return f"endorsed {result['stable_skill_id']} v{result['version']} ({result['content_hash'][:16]}…)"


def bounty_posted(result: dict[str, Any], _: CliView) -> str:
    return (
        f"bounty {result['bounty_id']} for {format_usdc(result['reward_micro_usdc'])} "
        f"until {when(result['expires_ms'])}"
    )


def bounties(rows: list[dict[str, Any]], _: CliView) -> str:
    if not rows:
        return "no live bounties"
    return "\n".join(
        f"{b['bounty_id']}  {format_usdc(b['reward_micro_usdc'])}  until {when(b['expires_ms'])}"
        f"{' (mine)' if b['mine'] else ''}\n"
        f"    {b['description'][:100]}\n    {b['matching_listings']} matching listings, by {b['author_peer_id']}"
        for b in rows
    )
