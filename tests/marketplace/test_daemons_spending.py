"""Issue 47 between two daemons on anvil: the agent (the API token) may not lift the purchase ceiling
with its own ``max_price``, and its purchases of the day stay within its budget; the person (the
CLI) may do both. Attack "the agent lifts its own ceiling": the agent bought a listing past the
ceiling by passing ``max_price`` to ``skills.buy``."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.daemons import Node, api_url, wait_for
from tests.marketplace.test_daemons import _listed, anvil_chain, started_pair

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)
__all__ = ["anvil_chain"]  # the fixture this module's tests use

PRICE = 20_000  # the seller's prices are clamped to exactly this
#: The ceiling lets one purchase through, and the agent's budget one purchase a day.
BUYER = {
    "BITTERBOT_MARKETPLACE__MAX_PURCHASE_MICRO_USDC": "30000",
    "BITTERBOT_MARKETPLACE__AGENT_DAILY_BUDGET_MICRO_USDC": "30000",
}
SELLER = {f"BITTERBOT_MARKETPLACE__{k}_PRICE_MICRO_USDC": str(PRICE) for k in ("MIN", "BASE", "MAX")}


def as_agent(node: Node, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    """A command over the API with the agent's token (the API token)."""
    url = wait_for(lambda: api_url(node), 60, "the API to listen", [node])
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    request.add_header("Authorization", f"Bearer {(node.data / 'api.token').read_text().strip()}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=180) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def spending(node: Node) -> dict[str, Any]:
    return dict(node.json("status")["daemon"]["details"]["market"].get("spending", {}))


def test_the_agent_stays_within_the_ceiling_and_its_budget_and_the_person_does_not_have_to(
    tmp_path: Any, anvil_chain: dict[str, str]
) -> None:
    with started_pair(tmp_path, anvil_chain, seller_env=SELLER, buyer_env=BUYER) as (seller, buyer, crystal):
        nodes = [seller, buyer]
        skill_id = seller.json("skills", "publish", crystal)["stable_skill_id"]
        (offer,) = wait_for(lambda: _listed(buyer, skill_id), 30, "the listing to reach the buyer", nodes)
        assert offer["price_micro_usdc"] == PRICE
        assert buyer.cli("wallet", "fund", "1").returncode == 0

        # a: a max_price past the ceiling is the person's alone
        status, doc = as_agent(buyer, "/v1/skills/buy", {"listing": skill_id, "max_price": "75"})
        assert status == 403, doc
        assert "only the person" in json.dumps(doc)
        assert buyer.json("wallet")["balance_micro_usdc"] == 1_000_000  # nothing asked for, nothing paid

        # b: within the ceiling, the agent buys once; the second purchase would pass its budget
        status, doc = as_agent(buyer, "/v1/skills/buy", {"listing": skill_id})
        assert status == 200 and doc["state"] == "completed", doc
        status, doc = as_agent(buyer, "/v1/skills/buy", {"listing": skill_id})
        assert status == 403 and "agent_daily_budget_micro_usdc" in json.dumps(doc), doc
        assert buyer.json("wallet")["balance_micro_usdc"] == 1_000_000 - PRICE

        # The person (the CLI: the owner's token) passes the ceiling and is not held to the budget.
        bought = buyer.json("skills", "buy", skill_id, "--max-price", "75")
        assert bought["state"] == "completed"
        assert buyer.json("wallet")["balance_micro_usdc"] == 1_000_000 - 2 * PRICE
        expected = {
            "ceiling_micro_usdc": 30_000,
            "agent_daily_budget_micro_usdc": 30_000,
            "agent_spent_today_micro_usdc": PRICE,  # the person's purchase does not count
            "agent_left_today_micro_usdc": 30_000 - PRICE,
        }
        assert wait_for(lambda: spending(buyer) == expected, 30, "status to show the agent's spending", nodes)
        assert "the agent spent 0.020000 USDC of 0.030000 USDC today" in buyer.cli("status").stdout
        assert buyer.json("wallet")["spending"] == expected  # what the dashboard's market page shows
