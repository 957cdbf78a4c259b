"""Issue 49 (3): a public test network on paper and in config. Base Sepolia's preset, checked on
anvil started with its chain id and our development token's code at the real USDC's address
(Circle's FiatToken there comes with the other half of the issue); confirmations, reorgs, the gas
price cap and the persisted log cursor."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from crypto.envelope import decode_envelope
from ground.authority import Speaker
from marketplace.chain import ESCROW_RULES, Chain, _deploy
from marketplace.chain_types import Account
from marketplace.errors import ChainError, GasPriceTooHigh
from marketplace.escrow import Escrow
from marketplace.exchange.buyer import PurchaseResult
from marketplace.exchange.deals import Sales, SaleState
from marketplace.exchange.protocol import KIND_DELIVERY_REQUEST, KIND_ERROR, DeliveryRequest
from marketplace.exchange.seller import COMMIT_AFTER_S
from marketplace.fiattoken.deploy import deploy_token_at
from marketplace.public_chain.log_cursor import Window, window
from marketplace.public_chain.presets import BASE_SEPOLIA, ChainTuning
from marketplace.settings import ChainSettings
from tests.marketplace.conftest import ANVIL, ARBITER, NO_ANVIL, anvil_process, need_fiattoken
from tests.marketplace.test_arbitration import arbiter_of
from tests.marketplace.test_cheating_parties import BuyerThatAsksLate
from tests.marketplace.test_purchase import Side, TamperingSeller, close, terms_of, trade

ESCROW = "0x" + "12" * 20


def test_the_base_sepolia_preset_names_its_chain_and_real_usdc() -> None:
    cfg = ChainSettings(url="https://sepolia.base.org", preset="base-sepolia", escrow_address=ESCROW)
    assert cfg.token_address == "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
    p = BASE_SEPOLIA
    assert cfg.settled() == ChainTuning(84532, p.confirmations, p.reorg_blocks, 2 * 10**9, 10_000, p.log_lookback)
    tuned = ChainSettings(url="https://sepolia.base.org", preset="base-sepolia", escrow_address=ESCROW,
                         confirmations=20, max_gas_price_gwei=0.5)  # fmt: skip
    assert tuned.settled() == ChainTuning(84532, 20, p.reorg_blocks, 5 * 10**8, 10_000, p.log_lookback)
    assert ChainSettings().settled() == ChainTuning()  # the embedded dev chain: act at once, no cap
    with pytest.raises(ValueError, match="leave token_address unset"):
        ChainSettings(url="https://sepolia.base.org", preset="base-sepolia", escrow_address=ESCROW,
                     token_address="0x" + "34" * 20)  # fmt: skip
    with pytest.raises(ValueError, match="needs the url"):
        ChainSettings(preset="base-sepolia")


def test_a_round_reads_confirmed_blocks_and_the_last_ones_again() -> None:
    assert window(0, 100, confirmations=10, reorg_blocks=300) == Window(0, 90)
    assert window(91, 100, confirmations=10, reorg_blocks=300) is None  # nothing newly confirmed
    assert window(91, 150, confirmations=10, reorg_blocks=30) == Window(61, 140)
    assert window(0, 5, confirmations=10, reorg_blocks=0) is None  # not one block confirmed yet


def _real_address_token(chain: Chain) -> str:
    """Circle's FiatToken (real USDC's code, behind its proxy, named as on Base) at Base Sepolia's USDC
    address, and an escrow of that token deployed (chain thread): the escrow's address."""
    w3: Any = chain.w3
    usdc = deploy_token_at(w3, w3.eth.accounts[0], BASE_SEPOLIA.usdc_address, name="USDC")
    rules = ESCROW_RULES
    return _deploy(w3, w3.eth.accounts[0], "Escrow", usdc, ARBITER.address, rules.min_delivery_window_s,
                   rules.max_lock_s, rules.dispute_window_s, rules.arbitration_window_s)  # fmt: skip


@contextlib.asynccontextmanager
async def base_sepolia_anvil() -> AsyncIterator[Chain]:
    """anvil as Base Sepolia (its chain id, a token at its USDC address), with the preset's settings."""
    if ANVIL is None:
        pytest.skip(NO_ANVIL)
    need_fiattoken()
    with anvil_process("--chain-id", str(BASE_SEPOLIA.chain_id)) as url:
        deployer = await Chain.rpc_dev(url, arbiter=ARBITER.address)
        try:
            escrow = await deployer.run(lambda: _real_address_token(deployer))
        finally:
            await deployer.close()
        cfg = ChainSettings(url=url, preset="base-sepolia", escrow_address=escrow)
        tuning = cfg.settled()
        chain = await Chain.rpc(url, cfg.token_address, escrow, dev=True, chain_id=tuning.chain_id)
        tuning.apply(chain)
        try:
            yield chain
        finally:
            await chain.close()


async def test_a_node_refuses_an_rpc_of_another_chain() -> None:
    if ANVIL is None:
        pytest.skip(NO_ANVIL)
    with anvil_process() as url:  # chain id 31337
        dev = await Chain.rpc_dev(url, arbiter=ARBITER.address)
        await dev.close()
        with pytest.raises(ChainError, match="is chain 31337, not 84532"):
            await Chain.rpc(url, dev.token_address, dev.escrow_address, chain_id=84532)


async def test_nothing_is_sent_above_the_gas_price_cap() -> None:
    async with base_sepolia_anvil() as chain:
        sender = Account.create()
        await chain.fund(sender.address, 1_000)
        nonce = await chain.run(lambda: int(chain.w3.eth.get_transaction_count(sender.address)))
        chain.max_gas_price_wei = 1  # anvil asks about 1 gwei
        with pytest.raises(GasPriceTooHigh, match="max_gas_price_gwei"):
            await chain.transfer(sender, Account.create().address, 1)
        assert await chain.run(lambda: int(chain.w3.eth.get_transaction_count(sender.address))) == nonce


async def _bought(chain: Chain, seller: Side, buyer: Side) -> PurchaseResult:
    """A purchase carried on past its lock: locked, confirmed, then the delivery asked for (as the
    buyer's daemon does in its next round)."""
    locked = await buyer.market.buy(
        seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
    )
    assert locked.state == "locked", locked
    for _ in range(chain.confirmations):
        await chain.mine()
    (result,) = await buyer.market.resume()
    return result


async def _disputed(chain: Chain, seller: Side, buyer: Side) -> PurchaseResult:
    """A purchase whose delivery the tampering seller committed and the buyer's daemon disputed."""
    result = await _bought(chain, seller, buyer)
    assert result.state == "refused"
    seller.clock.ahead_ms = (COMMIT_AFTER_S + 1) * 1000
    assert (await seller.market.settle_sales(), await buyer.market.settle_purchases()) == (
        {"committed": 1},
        {"disputed": 1},
    )
    return result


async def test_the_arbiter_acts_on_confirmed_blocks_and_its_cursor_survives_a_restart(tmp_path: Path) -> None:
    """A purchase on Base Sepolia's settings (the token at the real USDC address), disputed and
    answered: the arbiter resolves only once the answer is ``confirmations`` deep, reads on from its
    persisted cursor after a restart, not from block 0."""
    async with base_sepolia_anvil() as chain:
        seller, buyer = await trade(tmp_path, chain, seller_class=TamperingSeller)
        try:
            result = await _disputed(chain, seller, buyer)
            assert await seller.market.settle_sales() == {"disputed": 1}  # answered, in the latest block
            arbiter = await arbiter_of(chain, buyer)
            assert await arbiter.arbitrate_answered() == []  # not yet confirmed
            for _ in range(chain.confirmations):
                await chain.mine()
            (verdict,) = await arbiter.arbitrate_answered()
            assert not verdict.to_seller
            terms = await terms_of(buyer, result.purchase_id)
            assert (await Escrow(chain).status(terms)).state == "refunded"
            restarted = await arbiter_of(chain, buyer)  # same store: the cursor is read back
            assert await restarted.arbitrate_answered() == []
            async with buyer.store.reader().execute("SELECT next_block FROM chain_cursors") as rows:
                (row,) = await rows.fetchall()
            assert row[0] > 1
        finally:
            await close(buyer, seller)


async def test_an_answer_a_reorg_drops_is_never_acted_on_and_its_replay_is(tmp_path: Path) -> None:
    """A reorg (anvil's evm_snapshot and evm_revert) takes the seller's answer out of the chain
    before it is confirmed: the arbiter has not acted on it; the answer sent again is read and
    resolved once confirmed."""
    async with base_sepolia_anvil() as chain:
        seller, buyer = await trade(tmp_path, chain, seller_class=TamperingSeller)
        try:
            result = await _disputed(chain, seller, buyer)
            arbiter = await arbiter_of(chain, buyer)
            fork = await chain.run(lambda: chain.w3.provider.make_request("evm_snapshot", [])["result"])
            assert await seller.market.settle_sales() == {"disputed": 1}  # answered
            for _ in range(chain.confirmations - 2):
                await chain.mine()
            assert await arbiter.arbitrate_answered() == []  # two blocks short of confirmed
            await chain.run(lambda: chain.w3.provider.make_request("evm_revert", [fork]))  # the reorg
            terms = await terms_of(buyer, result.purchase_id)
            assert (await Escrow(chain).status(terms)).state == "disputed"  # the answer is gone
            for _ in range(chain.confirmations + 1):
                await chain.mine()
            assert await arbiter.arbitrate_answered() == []  # nothing was answered on this chain
            assert await seller.market.settle_sales() == {}  # the seller's daemon answers again
            for _ in range(chain.confirmations):
                await chain.mine()
            (verdict,) = await arbiter.arbitrate_answered()
            assert not verdict.to_seller and (await Escrow(chain).status(terms)).state == "refunded"
        finally:
            await close(buyer, seller)


async def test_a_refund_moves_the_purchase_only_once_confirmed(tmp_path: Path) -> None:
    """A deal's end (refunded, released) is recorded only once a reorg can no longer undo it: a
    record moved on an unconfirmed refund would never refund again if the reorg locked it anew."""
    async with base_sepolia_anvil() as chain:
        seller, buyer = await trade(tmp_path, chain, buyer_class=BuyerThatAsksLate)
        try:
            result = await _bought(chain, seller, buyer)
            assert result.state == "refused"  # asked after the deadline: nothing delivered
            assert await buyer.market.settle_purchases() == {}  # refund sent; not yet confirmed
            terms = await terms_of(buyer, result.purchase_id)
            assert (await Escrow(chain).status(terms)).state == "refunded"
            for _ in range(chain.confirmations):
                await chain.mine()
            assert await buyer.market.settle_purchases() == {"refunded": 1}
            assert buyer.market.stuck() == {}
        finally:
            await close(buyer, seller)


async def test_a_skill_is_delivered_only_against_a_confirmed_lock(tmp_path: Path) -> None:
    """A lock a reorg could still undo is no payment: delivered against it, the skill is out and
    the money back. The buyer asks once its lock is confirmed (its daemon's next round), and the
    seller refuses anyone who asks sooner."""
    async with base_sepolia_anvil() as chain:
        seller, buyer = await trade(tmp_path, chain)
        try:
            result = await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
            assert result.state == "locked" and "blocks deep" in result.detail, result
            pid = bytes.fromhex(result.purchase_id)
            sealed = buyer.market._buyer._messenger.seal(KIND_DELIVERY_REQUEST, DeliveryRequest(pid).body())
            answer = decode_envelope(await seller.market.answer(buyer.host.peer_id, sealed.encode()), max_bytes=10**6)
            assert answer.kind == KIND_ERROR and "blocks deep" in str(answer.body_map()["error"])  # asked too soon
            sale = await Sales(seller.store).get(pid)
            assert sale is not None and sale.state is SaleState.QUOTED and sale.delivery_key is None
            for _ in range(chain.confirmations):
                await chain.mine()
            (resumed,) = await buyer.market.resume()
            assert resumed.state == "completed" and resumed.crystal_id is not None
        finally:
            await close(buyer, seller)


async def test_a_deals_events_are_found_in_bounded_queries_newest_first(tmp_path: Path) -> None:
    """A public RPC refuses eth_getLogs from block 0: one deal's commitment is looked for a chunk of
    blocks a query, newest first, ``log_lookback`` blocks back at most."""
    async with base_sepolia_anvil() as chain:
        seller, buyer = await trade(tmp_path, chain, seller_class=TamperingSeller)
        try:
            chain.log_chunk_blocks = 3  # the dispute below lies several chunks under the head
            result = await _disputed(chain, seller, buyer)  # the buyer read the commitment to dispute it
            terms = await terms_of(buyer, result.purchase_id)
            for _ in range(chain.confirmations):
                await chain.mine()
            escrow = Escrow(chain)
            assert await escrow.commitment(terms.purchase_id) is not None
            chain.log_lookback = 5  # now older than the lookback: not searched
            assert await escrow.commitment(terms.purchase_id) is None
        finally:
            await close(buyer, seller)
