"""Issue 15 through `bitterbot-node run` processes on a real anvil: findings 1 and 2, and a seller
paid after the dispute window with the buyer's daemon gone (apart from test_daemons.py so that the
two files run on different workers)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from crypto.envelope import decode_envelope
from ground.authority import Speaker
from marketplace.chain import Chain
from marketplace.chain_types import DealTerms
from marketplace.escrow import Escrow
from marketplace.exchange.protocol import POLICY, quote_of
from marketplace.gossip.listing import LISTING, record_listing
from tests.conftest import CLI
from tests.daemons import Node, wait_for
from tests.marketplace.test_daemons import _listed, _rpc, anvil_chain, started_pair, trading_pair
from tests.marketplace.test_fair_exchange import BuyerThatLocksShort
from tests.marketplace.test_purchase import close, make_side

pytestmark = pytest.mark.slow  # real processes, hosts or chains

__all__ = ["anvil_chain", "trading_pair"]  # fixtures this module's tests use


def _db(node: Node) -> contextlib.closing[sqlite3.Connection]:
    """The node's database, read-only (the daemon keeps writing it)."""
    return contextlib.closing(sqlite3.connect(f"file:{node.data / 'memory' / 'crystals.db'}?mode=ro", uri=True))


def _sale(node: Node) -> tuple[DealTerms, str]:
    """The terms and state of the node's one sale."""
    with _db(node) as db:
        (quote, state) = db.execute("SELECT quote, state FROM sales").fetchone()
    return quote_of(quote).terms(), state


async def _chain_of(chain_env: dict[str, str]) -> Chain:
    return await Chain.rpc(
        chain_env["BITTERBOT_CHAIN__URL"],
        chain_env["BITTERBOT_CHAIN__TOKEN_ADDRESS"],
        chain_env["BITTERBOT_CHAIN__ESCROW_ADDRESS"],
        dev=True,
    )


def _deal_state(chain_env: dict[str, str], terms: DealTerms) -> str:
    async def read() -> str:
        chain = await _chain_of(chain_env)
        try:
            return (await Escrow(chain).status(terms)).state
        finally:
            await chain.close()

    return asyncio.run(read())


def _pending(url: str) -> int:
    return int(_rpc(url, "txpool_status")["pending"], 16)


def test_a_seller_is_paid_after_the_dispute_window_with_the_buyers_daemon_stopped(
    tmp_path: Path, anvil_chain: dict[str, str]
) -> None:
    """Finding 3 through daemons: the buyer's daemon dies with its release unsent. The seller's daemon
    commits its delivery before the deadline, claims after the dispute window and (its threshold
    reached) withdraws the payment to its wallet; the buyer's daemon stays stopped throughout."""
    url = anvil_chain["BITTERBOT_CHAIN__URL"]
    withdraw_at_once = {"BITTERBOT_MARKETPLACE__WITHDRAW_AT_MICRO_USDC": "1"}
    with started_pair(tmp_path, anvil_chain, seller_env=withdraw_at_once, buyer_env={}) as (seller, buyer, crystal):
        nodes = [seller, buyer]
        listing = seller.json("skills", "publish", crystal)
        skill_id, price = listing["stable_skill_id"], listing["price_micro_usdc"]
        wait_for(lambda: _listed(buyer, skill_id), 30, "the listing to reach the buyer", nodes)
        assert buyer.cli("wallet", "fund", "1").returncode == 0
        assert seller.cli("wallet", "fund", "0").returncode == 0  # ether for its commit, claim and withdrawal

        _rpc(url, "evm_setAutomine", False)  # transactions wait in the pool until evm_mine
        buying = subprocess.Popen(
            [*CLI, "skills", "buy", skill_id, "--max-price", "1", "--data-dir", str(buyer.data)],
            env=buyer.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(lambda: _pending(url) >= 1, 30, "the lock to be sent", nodes)
        _rpc(url, "evm_mine")  # the lock lands: the seller delivers, the buyer checks and sends its release
        wait_for(lambda: _pending(url) >= 1, 30, "the release to be sent", nodes)
        assert buyer.proc is not None
        buyer.proc.send_signal(signal.SIGKILL)
        buyer.proc.wait(timeout=10)
        buying.communicate(timeout=30)
        _rpc(url, "anvil_dropAllTransactions")  # the release never lands
        _rpc(url, "evm_setAutomine", True)
        terms, state = _sale(seller)
        assert (state, _deal_state(anvil_chain, terms)) == ("delivered", "locked")

        _rpc(url, "evm_increaseTime", 600 - 30)  # the deadline is half a minute away: the seller commits
        _rpc(url, "evm_mine")
        wait_for(lambda: _deal_state(anvil_chain, terms) == "delivered", 30, "the seller to commit", nodes)
        _rpc(url, "evm_increaseTime", 3_600)  # the dispute window passes with no dispute
        _rpc(url, "evm_mine")
        paid = wait_for(
            lambda: (w := seller.json("wallet"))["balance_micro_usdc"] == price and w,
            30,
            "the seller to be paid",
            nodes,
        )
        assert paid["owed_micro_usdc"] == 0 and paid["ledger"]["earned_micro_usdc"] == price
        assert _deal_state(anvil_chain, terms) == "released" and _sale(seller)[1] == "paid"
        assert buyer.proc.returncode == -signal.SIGKILL  # never restarted


def test_a_seller_daemon_delivers_nothing_against_a_lock_nearer_than_its_quote(
    tmp_path: Path, trading_pair: tuple[Node, Node, str], anvil_chain: dict[str, str]
) -> None:
    """Finding 1 through a daemon: a buyer (in this process, a named fake) locks with a deadline 200 s
    nearer than the seller daemon quoted, to take the skill and refund itself before the deadline."""
    seller, _, crystal = trading_pair
    skill_id = seller.json("skills", "publish", crystal)["stable_skill_id"]
    with _db(seller) as db:
        (envelope,) = db.execute("SELECT envelope FROM listings WHERE stable_skill_id = ?", (skill_id,)).fetchone()

    async def attack() -> None:
        chain = await _chain_of(anvil_chain)
        cheat = await make_side(tmp_path, "cheat", chain, buyer_class=BuyerThatLocksShort)
        try:
            await chain.fund(cheat.wallet.address, 1_000_000)
            signed = decode_envelope(envelope, max_bytes=POLICY.max_bytes)
            await record_listing(cheat.store, LISTING.parse(signed.body_map()), signed)
            await cheat.host.start()
            seller_peer = await cheat.host.connect(seller.address())
            seller_key = bytes.fromhex(seller.json("status")["identity"]["public_key"])
            result = await cheat.market.buy(seller_peer, seller_key, skill_id, speaker=Speaker.PERSON)
            assert result.state == "refused" and "no open deal on the quoted terms" in result.detail, result
            assert (await cheat.store.stats())["total"] == 0  # nothing arrived
            terms, state = _sale(seller)
            assert state == "quoted"  # the seller daemon delivered nothing
            nearer = replace(terms, deadline=terms.deadline - 200)
            assert (await Escrow(chain).status(nearer)).state == "locked"
            await chain.advance_time(401)
            await Escrow(chain).refund(cheat.wallet, nearer)  # it gets back only its own money
            assert await chain.balance(cheat.wallet.address) == 1_000_000
        finally:
            await close(cheat)
            await chain.close()

    asyncio.run(attack())
    assert seller.json("wallet")["ledger"]["sales"] == 0


def test_a_buyer_daemon_refuses_a_quote_whose_deadline_is_beyond_its_longest_lock(
    tmp_path: Path, anvil_chain: dict[str, str]
) -> None:
    """Finding 2 through daemons: a seller quoting a deadline 2 h away, to a buyer that locks money
    for at most 1 h, gets nothing locked."""
    far = {"BITTERBOT_CHAIN__ESCROW_WINDOW_S": "7200"}
    short = {"BITTERBOT_CHAIN__MAX_LOCK_S": "3600"}
    with started_pair(tmp_path, anvil_chain, seller_env=far, buyer_env=short) as (seller, buyer, crystal):
        skill_id = seller.json("skills", "publish", crystal)["stable_skill_id"]
        wait_for(lambda: _listed(buyer, skill_id), 30, "the listing to reach the buyer", [seller, buyer])
        assert buyer.cli("wallet", "fund", "1").returncode == 0
        refused = buyer.cli("skills", "buy", skill_id, "--max-price", "1")
        assert refused.returncode == 2, refused.stdout
        assert "more than the 3600 s this node locks money for" in refused.stderr
        assert buyer.json("wallet")["balance_micro_usdc"] == 1_000_000  # nothing locked
