"""The market and skill-ledger commands' answers as a person reads them."""

from __future__ import annotations

from typing import Any

from marketplace.pricing import format_usdc
from node.commands.texts.view import CliView


def recorded(doc: dict[str, Any], _: CliView) -> str:
    state = "listable" if doc["listable"] else "not listable yet: " + "; ".join(doc["reasons"])
    return f"recorded: {doc['successes']} of {doc['executions']} succeeded ({state})"


def priced(doc: dict[str, Any], view: CliView) -> str:
    verdict = "listable" if doc["listable"] else "not listable: " + "; ".join(doc["not_listable_because"])
    lines = [f"{format_usdc(doc['price_micro_usdc'])}  ({verdict})"]
    if not view.flags.get("explain"):
        return lines[0]
    market = view.locate()[0].config.marketplace
    f, i = doc["factors"], doc["inputs"]
    lines += [
        f"  base        {format_usdc(f['base_micro_usdc'])}",
        f"  quality     {f['quality']}  = success rate {f['success_rate']} x average reward {f['average_reward']}",
        f"  demand      {f['demand']}  = 1 + ln({i['unique_buyers']} buyers"
        f" + {i['bounty_matches']} bounties + 1) x 0.1",
        f"  reputation  {f['reputation']}  = 0.5 + {i['seller_reputation_milli'] / 1000} (how peers rate this node)",
        f"  scarcity    {f['scarcity']}  ({f['scarcity_class']}: {i['category_listings_seen']} listings of its category"
        " seen)",
    ]
    clamp = (
        f"  clamped to [{format_usdc(market.min_price_micro_usdc)}, {format_usdc(market.max_price_micro_usdc)}]"
        if f["clamped"]
        else ""
    )
    lines.append(f"  = {format_usdc(f['unclamped_micro_usdc'])}{clamp}")
    return "\n".join(lines)


def bought(result: dict[str, Any], _: CliView) -> str:
    price = format_usdc(result["price_micro_usdc"])
    if result["state"] == "completed":
        return f"bought {result['stable_skill_id']} for {price}: stored as crystal {result['crystal_id']}"
    return f"purchase {result['purchase_id'][:16]}… {result['state']} ({price}): {result['detail']}"


def bought_exit(result: dict[str, Any]) -> int:
    """A purchase that did not complete (yet) ends the command with exit 1: it says where it stands."""
    return 0 if result["state"] == "completed" else 1


def _short(micro: int) -> str:
    """USDC to three places, by integer arithmetic (display only; amounts stay integers)."""
    return f"{micro // 1_000_000}.{(micro % 1_000_000) // 1000:03d}"


def wallet(doc: dict[str, Any], _: CliView | None = None) -> str:
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
        detail = f": {p['detail']}" if p["detail"] else ""
        lines.append(f"purchase {p['purchase_id'][:16]}… {p['state']} ({p['skill']}){detail}")
        if p.get("held"):
            lines.append(f"  {p['held']['says']}")
    return "\n".join(lines)


def funded(doc: dict[str, Any], _: CliView) -> str:
    return f"{doc['address']} now holds {format_usdc(doc['balance_micro_usdc'])}"


def emerging(doc: dict[str, Any], _: CliView) -> str:
    if not doc["emerging"]:
        return "no emerging skills yet: a task written down again and again (task patterns, skills) shows here"
    lines = [f"{e['id']}  {e['label']} → Confidence: {round(e['confidence'] * 100)}% | Occurrences: {e['occurrences']}"
             for e in doc["emerging"]]  # fmt: skip
    if doc["total"] > len(doc["emerging"]):
        lines.append(f"… {doc['total'] - len(doc['emerging'])} more (--limit)")
    return "\n".join([*lines, "promote one with: bitterbot-node skills crystallise ID"])


def crystallised(doc: dict[str, Any], _: CliView) -> str:
    return (
        f"crystallised {doc['skill']['id']}: {doc['skill']['text']}\n"
        f"from {doc['frozen']} practices ({doc['from']['occurrences']} occurrences), now frozen and linked to it"
        + (f"; their {doc['runs']} recorded runs count as its own" if doc.get("runs") else "")
    )
