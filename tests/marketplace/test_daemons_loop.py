"""Issue 49: the whole loop from practice to sale, between two `bitterbot-node run` processes.

A practice written three times on the seller becomes an emerging skill, is crystallised (private),
run and recorded, and published by the person; the buyer finds it, buys it, is told it is held
for review and how to release it, releases it, runs it and rates the run; then the seller's
standing on the buyer and the seller's earnings. On anvil, with our development token, and with
Circle's FiatToken (the code real USDC runs) already on the chain as on a test network: there the
escrow alone is deployed (`chain deploy --token`), `wallet fund` refuses, and the buyer is paid
USDC by the token's minter.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemons import Node, wait_for
from tests.marketplace.conftest import anvil_holding_usdc
from tests.marketplace.test_daemons import anvil_chain as anvil_chain  # the chain this loop runs on
from tests.marketplace.test_daemons import chain_settings, started_pair

pytestmark = pytest.mark.slow  # real processes and a real chain

PRACTICES = (
    "To rotate the nginx logs run logrotate -f /etc/logrotate.d/nginx then reload nginx",
    "To rotate the nginx logs: logrotate -f /etc/logrotate.d/nginx, then reload nginx",
    "Rotate the nginx logs: run logrotate -f /etc/logrotate.d/nginx and reload nginx",
)


@pytest.fixture(params=["dev token", "usdc"])
def chain_env(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The [chain] settings both daemons get: our development token, or Circle's FiatToken (named
    "USDC", as on Base) with only our escrow deployed for it."""
    if request.param == "dev token":
        yield request.getfixturevalue("anvil_chain")
        return
    with anvil_holding_usdc(name="USDC") as (url, token):
        yield chain_settings(url, "--token", token)


def _fund(buyer: Node, chain_env: dict[str, str]) -> None:
    """1 USDC (and gas) in the buyer's wallet: minted by `wallet fund` on our development token; on
    real USDC, which `wallet fund` cannot mint, paid by whoever holds it (the token's minter here)."""
    if chain_env["BITTERBOT_CHAIN__DEV"] == "true":
        assert buyer.cli("wallet", "fund", "1").returncode == 0
        return
    from web3 import Web3

    from marketplace.fiattoken.faucet import give

    refused = buyer.cli("wallet", "fund", "1")
    assert refused.returncode != 0 and "mints our development token" in refused.stderr, refused
    address = buyer.json("wallet")["address"]
    assert address in refused.stderr  # where to send USDC
    url, token = chain_env["BITTERBOT_CHAIN__URL"], chain_env["BITTERBOT_CHAIN__TOKEN_ADDRESS"]
    give(Web3(Web3.HTTPProvider(url)), token, address, 1_000_000)
    assert buyer.json("wallet")["balance_micro_usdc"] == 1_000_000


def _offered(buyer: Node, skill_id: str) -> list[dict[str, Any]]:
    return [r for r in buyer.json("skills", "list", "logrotate") if r["stable_skill_id"] == skill_id]


def _seller_row(buyer: Node, seller_peer: str) -> dict[str, Any] | None:
    rows = [r for r in buyer.json("peers") if r["peer_id"] == seller_peer]
    return rows[0] if rows and rows[0]["local"] > 0 else None


def test_practice_to_sale_between_two_daemons(tmp_path: Path, chain_env: dict[str, str]) -> None:
    rounds = {"BITTERBOT_P2P__ATTESTATION_INTERVAL_MIN": "0.02"}  # the buyer's trust round every 1.2 s
    with started_pair(tmp_path, chain_env, seller_env={}, buyer_env=rounds) as (seller, buyer, _):
        nodes = [seller, buyer]
        for text in PRACTICES:  # a practice seen three times
            seller.json("memory", "add", text, "--type", "task_pattern")
        patterns = [p for p in seller.json("skills", "emerging")["emerging"] if "nginx" in p["label"]]
        assert [p["occurrences"] for p in patterns] == [3]
        skill = seller.json("skills", "crystallise", patterns[0]["id"])["skill"]
        assert skill["scope"] == "private"
        for _ in range(3):  # the seller's agent runs it
            assert seller.cli("skills", "record", skill["id"], "--success").returncode == 0

        listing = seller.json("skills", "publish", skill["id"])  # the person, through the control socket
        assert seller.json("memory", "show", skill["id"])["crystal"]["scope"] == "public"
        skill_id, price = listing["stable_skill_id"], listing["price_micro_usdc"]
        (offer,) = wait_for(lambda: _offered(buyer, skill_id), 30, "the listing to reach the buyer", nodes)
        assert offer["price_micro_usdc"] == price

        _fund(buyer, chain_env)
        bought = buyer.json("skills", "buy", skill_id, "--max-price", "1")
        assert bought["state"] == "completed" and bought["price_micro_usdc"] == price
        crystal = bought["crystal_id"]
        shown = buyer.json("memory", "show", crystal)
        assert shown["held"]["status"] == "held"  # the seller is not trusted here yet
        assert f"memory quarantine approve {crystal}" in buyer.cli("memory", "show", crystal).stdout
        assert "held for your review" in buyer.cli("skills", "purchases").stdout
        (purchase,) = buyer.json("wallet")["recent_purchases"]
        assert purchase["held"]["release"] == f"bitterbot-node memory quarantine approve {crystal}"

        assert buyer.cli("memory", "quarantine", "approve", crystal).returncode == 0
        assert buyer.json("memory", "show", crystal)["held"]["status"] == "approved"
        for _ in range(2):  # the buyer's agent runs it, and rates each run
            assert buyer.cli("skills", "record", crystal, "--success", "--reward", "0.9").returncode == 0

        seller_peer = seller.json("status")["identity"]["peer_id"]
        row = wait_for(lambda: _seller_row(buyer, seller_peer), 60, "the seller's standing on the buyer", nodes)
        assert row["local"] > 0
        ledger = wait_for(
            lambda: (led := dict(seller.json("wallet")["ledger"]))["sales"] and led, 30, "the seller's earnings", nodes
        )
        assert ledger["earned_micro_usdc"] == price and ledger["unique_buyers"] == 1
        assert ledger["top_skills"] == [{"stable_skill_id": skill_id, "sales": 1, "earned_micro_usdc": price}]
