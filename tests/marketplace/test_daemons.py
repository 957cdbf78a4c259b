"""A purchase between two `bitterbot-node run` processes, settled on a real anvil chain.

The embedded chain lives inside one process, so daemons trade over a shared JSON-RPC chain:
`chain deploy` puts our contracts on anvil, both nodes get the same [chain] settings, the
seller publishes a proven skill, the buyer funds its wallet and runs `skills buy`.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CLI, clean_env, run_cli
from tests.daemons import Node, running_details, wait_for
from tests.marketplace.conftest import ANVIL, ARBITER, NO_ANVIL, anvil_process

pytestmark = pytest.mark.slow  # real processes, hosts or chains (`-m "not slow"` skips them)

SKILL = "Restore a Postgres replica: pg_basebackup -R from the primary, then start it"


@pytest.fixture
def anvil_chain() -> Iterator[dict[str, str]]:
    if ANVIL is None:
        pytest.skip(NO_ANVIL)
    with anvil_process() as url:
        yield chain_settings(url)


def chain_settings(url: str, *options: str) -> dict[str, str]:
    """`chain deploy` on the chain at ``url`` (with ``options``, such as ``--token``): the [chain]
    settings it prints, as the daemons' variables."""
    deployed = run_cli("chain", "deploy", "--url", url, "--arbiter", ARBITER.address, *options)
    assert deployed.returncode == 0, deployed.stderr
    config = dict(re.findall(r'^(\w+) = "?([^"\n]+)"?$', deployed.stdout, re.MULTILINE))
    assert config["url"] == url and config["dev"] == ("false" if options else "true")
    return {
        "BITTERBOT_CHAIN__URL": url,
        "BITTERBOT_CHAIN__TOKEN_ADDRESS": config["token_address"],
        "BITTERBOT_CHAIN__ESCROW_ADDRESS": config["escrow_address"],
        "BITTERBOT_CHAIN__DEV": config["dev"],
        "BITTERBOT_CHAIN__RESUME_INTERVAL_S": "1",
    }


@contextlib.contextmanager
def started_pair(
    tmp_path: Path, chain_env: dict[str, str], *, seller_env: dict[str, str], buyer_env: dict[str, str]
) -> Iterator[tuple[Node, Node, str]]:
    """A seller and a buyer daemon on one anvil chain, connected; the seller holds a proven skill (its id)."""
    base = clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_P2P__DEGREE_LOW="1", **chain_env)
    seller = Node(tmp_path, "seller", dict(base, **seller_env))
    buyer = Node(tmp_path, "buyer", dict(base, **buyer_env))
    nodes = [seller]
    seller.start()
    try:
        buyer.env["BITTERBOT_P2P__BOOTSTRAP"] = json.dumps([seller.address()])
        buyer.start()
        nodes.append(buyer)
        buyer.address()
        crystal = seller.json("memory", "add", SKILL, "--type", "skill", "--scope", "shared")["crystal"]["id"]
        for _ in range(3):
            assert seller.cli("skills", "record", crystal, "--success").returncode == 0
        yield seller, buyer, crystal
    finally:
        logs = {node.data.name: node.stop() for node in nodes}
    for name, log in logs.items():
        assert "Traceback" not in log, f"{name}:\n{log}"


@pytest.fixture
def trading_pair(tmp_path: Path, anvil_chain: dict[str, str]) -> Iterator[tuple[Node, Node, str]]:
    # The buyer's ceiling is below the skill's price: `skills buy` must be told to pay more (finding 8).
    ceiling = {"BITTERBOT_MARKETPLACE__MAX_PURCHASE_MICRO_USDC": "5000"}
    with started_pair(tmp_path, anvil_chain, seller_env={}, buyer_env=ceiling) as pair:
        yield pair


def _listed(node: Node, skill_id: str) -> list[dict[str, Any]]:
    return [r for r in node.json("skills", "list") if r["stable_skill_id"] == skill_id and not r["mine"]]


def _settled(node: Node) -> dict[str, Any] | None:
    ledger = dict(node.json("wallet")["ledger"])
    return ledger if ledger["sales"] else None


def test_two_daemons_buy_and_sell_over_anvil(trading_pair: tuple[Node, Node, str]) -> None:
    seller, buyer, crystal = trading_pair
    nodes = [seller, buyer]
    plain_price = seller.json("skills", "price", crystal)["price_micro_usdc"]

    # The buyer asks for such a skill first: the bounty reaches the seller and raises its price.
    posted = buyer.json("skills", "bounty", "Restore a Postgres replica quickly", "--reward", "0.5", "--id", "pg")
    assert posted["reward_micro_usdc"] == 500_000
    wait_for(lambda: seller.json("skills", "bounties"), 30, "the bounty to reach the seller", nodes)
    listing = seller.json("skills", "publish", crystal)
    price = listing["price_micro_usdc"]
    assert price > plain_price  # demand: 1 + ln(0 buyers + 1 bounty + 1) x 0.1
    skill_id = listing["stable_skill_id"]
    (offer,) = wait_for(lambda: _listed(buyer, skill_id), 30, "the listing to reach the buyer", nodes)
    assert [b["bounty_id"] for b in offer["bounties"]] == ["pg"] and not offer["verified"]
    assert buyer.json("skills", "bounties")[0]["matching_listings"] == 1

    poor = buyer.cli("skills", "buy", skill_id, "--max-price", "1")
    assert poor.returncode == 2 and "insufficient funds" in poor.stderr
    assert buyer.cli("wallet", "fund", "1").returncode == 0

    above_ceiling = buyer.cli("skills", "buy", skill_id)
    assert above_ceiling.returncode == 2 and "above this node's ceiling of 0.005000 USDC" in above_ceiling.stderr
    assert "--max-price" in above_ceiling.stderr
    too_dear = buyer.cli("skills", "buy", skill_id, "--max-price", "0.000001")
    assert too_dear.returncode == 2 and "more than 1" in too_dear.stderr
    assert buyer.json("wallet")["balance_micro_usdc"] == 1_000_000  # nothing locked by either
    bought = buyer.json("skills", "buy", skill_id, "--max-price", "1")
    assert bought["state"] == "completed" and bought["price_micro_usdc"] == price
    stored = buyer.json("memory", "show", bought["crystal_id"])
    assert stored["crystal"]["text"] == SKILL and stored["crystal"]["origin"] == "peer"
    bounty = stored["crystal"]["bounty"]
    assert (bounty["bounty_id"], bounty["reward_micro_usdc"]) == ("pg", 500_000)
    assert bounty["priority_boost"] == pytest.approx(1 + 0.2 * 0.5 / 1.5)  # the seed's boost, from the reward

    buyer_wallet = buyer.json("wallet")
    assert buyer_wallet["balance_micro_usdc"] == 1_000_000 - price
    assert buyer_wallet["ledger"]["spent_micro_usdc"] == price and buyer_wallet["ledger"]["purchases"] == 1
    # issue 32: a purchase read "completed" without naming what was bought
    (purchase,) = buyer_wallet["recent_purchases"]
    assert purchase["skill"] == SKILL  # its first line, under 80 characters
    assert f"({SKILL})" in buyer.cli("wallet").stdout and SKILL in buyer.cli("skills", "purchases").stdout
    earned = wait_for(lambda: _settled(seller), 30, "the seller to see the escrow released", nodes)
    assert earned["earned_micro_usdc"] == price and earned["unique_buyers"] == 1
    assert earned["top_skills"] == [{"stable_skill_id": skill_id, "sales": 1, "earned_micro_usdc": price}]
    seller_wallet = seller.json("wallet")  # paid into the escrow, withdrawn in one transfer for many sales
    assert (seller_wallet["balance_micro_usdc"], seller_wallet["owed_micro_usdc"]) == (0, price)
    paid = [s for s in seller_wallet["recent_sales"] if s["state"] == "paid"]  # the dashboard's list of sales
    assert [s["buyer"] for s in paid] == [buyer.json("status")["identity"]["public_key"]]
    assert "earned    " in seller.cli("wallet").stdout
    no_gas = seller.cli("wallet", "withdraw")  # the seller never needed ether so far: a clear refusal
    assert no_gas.returncode == 2 and "too little ether for the gas" in no_gas.stderr, no_gas.stderr
    assert seller.cli("wallet", "fund", "0").returncode == 0  # gas only
    withdrawn = seller.cli("wallet", "withdraw")
    assert withdrawn.returncode == 0 and "the escrow still owes 0.000000 USDC" in withdrawn.stdout, withdrawn.stderr
    assert seller.json("wallet")["balance_micro_usdc"] == price
    too_much = seller.cli("wallet", "withdraw", "--usdc", "0.5").stderr
    assert "the escrow owes this node 0.000000 USDC, less than 0.500000 USDC" in too_much

    again = buyer.cli("skills", "buy", f"{seller.json('status')['identity']['peer_id']}/nope")
    assert again.returncode == 2 and "no live listing" in again.stderr


def _rpc(url: str, method: str, *params: Any) -> Any:
    """One JSON-RPC call to anvil (its test methods steer mining)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.loads(response.read())
    assert "error" not in answer, answer
    return answer["result"]


def _purchase_states(node: Node) -> list[str]:
    return [p["state"] for p in node.json("wallet")["recent_purchases"]]


def test_a_buyer_killed_with_its_payment_in_flight_finishes_the_purchase_after_restart(
    trading_pair: tuple[Node, Node, str], anvil_chain: dict[str, str]
) -> None:
    """kill -9 of the buyer's daemon while its escrow lock is sent but not mined: after a restart the
    daemon finds the lock on chain, fetches the skill, stores it and releases; the buyer pays once."""
    url = anvil_chain["BITTERBOT_CHAIN__URL"]
    seller, buyer, crystal = trading_pair
    nodes = [seller, buyer]
    listing = seller.json("skills", "publish", crystal)
    skill_id, price = listing["stable_skill_id"], listing["price_micro_usdc"]
    wait_for(lambda: _listed(buyer, skill_id), 30, "the listing to reach the buyer", nodes)
    assert buyer.cli("wallet", "fund", "1").returncode == 0

    _rpc(url, "evm_setAutomine", False)  # transactions now wait in the pool until evm_mine
    buying = subprocess.Popen(
        [*CLI, "skills", "buy", skill_id, "--max-price", "1", "--data-dir", str(buyer.data)],
        env=buyer.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: int(_rpc(url, "txpool_status")["pending"], 16) >= 1, 30, "the lock to be sent", nodes)
    assert buyer.proc is not None
    buyer.proc.send_signal(signal.SIGKILL)
    buyer.proc.wait(timeout=10)
    _, cut_off = buying.communicate(timeout=30)
    assert buying.returncode == 2 and "cannot reach the daemon" in cut_off and "Traceback" not in cut_off
    _rpc(url, "evm_mine")  # the lock the buyer sent before it died lands on chain
    _rpc(url, "evm_setAutomine", True)

    assert "Traceback" not in buyer.stop()  # the killed run's log, collected
    buyer.start()
    buyer.address()
    wait_for(lambda: _purchase_states(buyer) == ["completed"], 60, "the purchase to be resumed", nodes)
    # Bought from a seller not trusted here yet: stored, and held for the person like gossip (issue 27).
    assert buyer.json("memory", "search", "pg_basebackup replica", "--mode", "keyword") == []
    hits = buyer.json("memory", "search", "pg_basebackup replica", "--mode", "keyword", "--held")
    assert [h["crystal"]["text"] for h in hits if h["crystal"]["origin"] == "peer"] == [SKILL]
    assert all(h["crystal"]["quarantined"] for h in hits)
    assert buyer.json("wallet")["balance_micro_usdc"] == 1_000_000 - price  # paid exactly once
    earned = wait_for(lambda: _settled(seller), 30, "the seller to see the escrow released", nodes)
    assert earned["earned_micro_usdc"] == price


def test_the_embedded_chain_refuses_to_trade_with_other_nodes_and_says_how(tmp_path: Path) -> None:
    node = Node(tmp_path, "alone", clean_env(BITTERBOT_MEMORY__EMBEDDER="hashing"))
    node.start()
    try:
        node.address()
        # The embedded chain is built when a command first needs it, not at every start (issue 31).
        market = (running_details(node) or {})["market"]
        assert market["state"] == "starts when a market command first needs it", market
        refused = node.cli("skills", "buy", "db.pg-upgrade")
        assert refused.returncode == 2 and "embedded development chain" in refused.stderr
        assert "[chain] url" in refused.stderr
        funded = node.cli("wallet", "fund", "0.25")
        assert funded.returncode == 0 and "0.250000 USDC" in funded.stdout
        wallet = node.json("wallet")
        assert wallet["chain"] == "embedded" and wallet["balance_micro_usdc"] == 250_000
        assert wallet["ledger"]["earned_micro_usdc"] == 0 and len(wallet["ledger"]["trend"]) == 7
        assert wait_for(lambda: (running_details(node) or {})["market"]["state"] == "ready", 30, "the status")
        bad = node.cli("wallet", "fund", "0.0000001")
        assert bad.returncode == 2 and "at most 6 decimal places" in bad.stderr
    finally:
        log = node.stop()
    assert "Traceback" not in log, log


def test_a_chain_that_goes_away_is_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    if ANVIL is None:
        pytest.skip(NO_ANVIL)
    with anvil_process() as url:
        deployed = run_cli("chain", "deploy", "--url", url, "--arbiter", ARBITER.address, "--json")
        assert deployed.returncode == 0, deployed.stderr
        addresses = json.loads(deployed.stdout)
        node = Node(tmp_path, "node", clean_env(
            BITTERBOT_MEMORY__EMBEDDER="hashing", BITTERBOT_CHAIN__URL=url, BITTERBOT_CHAIN__DEV="true",
            BITTERBOT_CHAIN__TOKEN_ADDRESS=addresses["token_address"],
            BITTERBOT_CHAIN__ESCROW_ADDRESS=addresses["escrow_address"],
        ))  # fmt: skip
        node.start()
        try:
            node.address()
            wait_for(lambda: node.json("wallet")["balance_micro_usdc"] == 0, 30, "the market to reach anvil", [node])
        except BaseException:
            node.stop()
            raise
    try:  # anvil is gone
        refused = node.cli("wallet", "fund", "1")
        assert refused.returncode == 2 and f"cannot reach {url}" in refused.stderr
        wallet = node.json("wallet")
        assert wallet["balance_micro_usdc"] is None and f"cannot reach {url}" in wallet["chain_error"]
    finally:
        log = node.stop()
    assert "Traceback" not in log, log
