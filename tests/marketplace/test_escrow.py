"""The escrow contract (contracts/Escrow.vy) through its client, on the embedded EVM and on anvil:
who may move a deal where, within the bounds it was deployed with (issue 15)."""

from __future__ import annotations

import os

import pytest

from marketplace.chain import ESCROW_RULES, Chain
from marketplace.chain_types import Account, Commitment, DealTerms
from marketplace.errors import InsufficientFunds, TransactionReverted
from marketplace.escrow import Escrow
from tests.marketplace.conftest import ARBITER, funds

HASH = bytes(range(32))
#: What a seller commits, as the contract sees it: it reads none of it, the arbiter does.
SEALED = Commitment(b"\1" * 32, b"\2" * 32, b"\3" * 32, b"sealed skill")


@pytest.fixture
async def parties(chain: Chain) -> tuple[Account, Account]:
    buyer, seller = Account.create(), Account.create()
    await chain.fund(buyer.address, 5_000_000)
    await chain.fund(seller.address, 0)
    return buyer, seller


async def terms(
    chain: Chain, buyer: Account, seller: Account, *, ahead_s: int = 600, amount: int = 10_000
) -> DealTerms:
    return DealTerms(buyer.address, os.urandom(32), seller.address, amount, HASH, await chain.timestamp() + ahead_s)


async def test_a_buyer_releases_once_and_only_the_buyer(chain: Chain, parties: tuple[Account, Account]) -> None:
    buyer, seller = parties
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    await escrow.lock(buyer, deal)
    assert (await escrow.status(deal)).state == "locked" and await chain.balance(buyer.address) == 4_990_000
    with pytest.raises(TransactionReverted, match="purchase already locked"):
        await escrow.lock(buyer, deal)  # never paid twice
    with pytest.raises(TransactionReverted, match="only the buyer releases"):
        await escrow.release(seller, deal)
    await escrow.release(buyer, deal)
    assert (await escrow.status(deal)).state == "released" and await funds(chain, seller.address) == 10_000
    with pytest.raises(TransactionReverted, match="not refundable"):
        await escrow.refund(buyer, deal)


async def test_a_purchase_id_is_the_buyers_own(chain: Chain, parties: tuple[Account, Account]) -> None:
    """Finding 9: ids chosen by the seller could be locked first by anyone (squatted)."""
    buyer, seller = parties
    squatter = Account.create()
    await chain.fund(squatter.address, 1_000_000)
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    stolen = DealTerms(squatter.address, deal.nonce, seller.address, 1, HASH, deal.deadline)
    await escrow.lock(squatter, stolen)  # the same nonce, from another account: another purchase id
    assert stolen.purchase_id != deal.purchase_id
    await escrow.lock(buyer, deal)
    assert (await escrow.status(deal)).state == "locked"
    with pytest.raises(TransactionReverted, match="the buyer locks its own purchase"):
        await escrow.lock(squatter, deal)


async def test_the_deadline_lies_within_the_bounds_the_escrow_was_deployed_with(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    """Findings 1 and 2, in the contract: a 2-second lock, and a lock for millennia."""
    escrow = Escrow(chain)
    rules = await escrow.rules()
    assert (rules.min_delivery_window_s, rules.max_lock_s) == (300, 86_400)
    with pytest.raises(TransactionReverted, match="deadline nearer than the delivery window"):
        await escrow.lock(parties[0], await terms(chain, *parties, ahead_s=2))
    with pytest.raises(TransactionReverted, match="deadline further than the longest lock"):
        await escrow.lock(parties[0], await terms(chain, *parties, ahead_s=10**12))
    assert await chain.balance(parties[0].address) == 5_000_000


async def test_a_committed_delivery_is_paid_without_the_buyer_after_the_window(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    buyer, seller = parties
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    await escrow.lock(buyer, deal)
    with pytest.raises(TransactionReverted, match="only the seller commits"):
        await escrow.commit(buyer, deal, SEALED)
    await escrow.commit(seller, deal, SEALED)
    assert await escrow.commitment(deal.purchase_id) == SEALED  # the delivery itself, readable by the buyer
    assert (await escrow.status(deal)).state == "delivered"
    with pytest.raises(TransactionReverted, match="dispute window open"):
        await escrow.claim(seller, deal)
    await chain.advance_time(601)
    with pytest.raises(TransactionReverted, match="not refundable"):  # committed: past the deadline, no refund
        await escrow.refund(buyer, deal)
    await chain.advance_time(ESCROW_RULES.dispute_window_s)
    await escrow.claim(seller, deal)
    assert (await escrow.status(deal)).state == "released" and await funds(chain, seller.address) == 10_000


async def test_nothing_committed_by_the_deadline_is_refunded_without_the_seller(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    buyer, seller = parties
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    await escrow.lock(buyer, deal)
    with pytest.raises(TransactionReverted, match="deadline not reached"):
        await escrow.refund(buyer, deal)
    await chain.advance_time(601)
    with pytest.raises(TransactionReverted, match="deadline passed"):
        await escrow.commit(seller, deal, SEALED)  # too late to commit
    await escrow.refund(seller, deal)  # anyone may send it; the money goes to the buyer
    assert (await escrow.status(deal)).state == "refunded" and await chain.balance(buyer.address) == 5_000_000


@pytest.mark.parametrize("to_seller", [True, False])
async def test_an_answered_dispute_goes_to_the_arbiter_whose_decision_is_one_transaction(
    chain: Chain, parties: tuple[Account, Account], to_seller: bool
) -> None:
    buyer, seller = parties
    escrow = Escrow(chain)
    assert (await escrow.rules()).arbiter == ARBITER.address
    await chain.fund(ARBITER.address, 0)
    deal = await terms(chain, *parties)
    await escrow.lock(buyer, deal)
    await escrow.commit(seller, deal, SEALED)
    with pytest.raises(TransactionReverted, match="only the buyer disputes"):
        await escrow.dispute(seller, deal)
    await escrow.dispute(buyer, deal)
    assert (await escrow.status(deal)).state == "disputed"
    with pytest.raises(TransactionReverted, match="the seller has not answered"):
        await escrow.resolve(ARBITER, deal, to_seller=False)  # the arbiter cannot cut the seller short
    with pytest.raises(TransactionReverted, match="only the seller answers"):
        await escrow.answer(buyer, deal, b"\4" * 32)
    await escrow.answer(seller, deal, b"\4" * 32)
    assert (await escrow.status(deal)).state == "answered"
    assert await escrow.answer_of(deal.purchase_id) == (deal, b"\4" * 32)  # the terms and the secret, on chain
    await chain.advance_time(ESCROW_RULES.dispute_window_s + 1)
    with pytest.raises(TransactionReverted, match="in arbitration"):
        await escrow.claim(seller, deal)
    with pytest.raises(TransactionReverted, match="only the arbiter resolves"):
        await escrow.resolve(buyer, deal, to_seller=False)
    await escrow.resolve(ARBITER, deal, to_seller=to_seller)
    assert (await escrow.status(deal)).state == ("released" if to_seller else "refunded")
    paid, back = (10_000, 4_990_000) if to_seller else (0, 5_000_000)
    assert (await funds(chain, seller.address), await chain.balance(buyer.address)) == (paid, back)


async def _at(chain: Chain, when: int) -> None:
    await chain.advance_time(when - await chain.timestamp())


async def test_an_answered_dispute_the_arbiter_leaves_open_pays_the_seller(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    buyer, seller = parties
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    await escrow.lock(buyer, deal)
    await escrow.commit(seller, deal, SEALED)
    await escrow.dispute(buyer, deal)
    await escrow.answer(seller, deal, b"\4" * 32)
    answered = (await escrow.status(deal)).since
    await _at(chain, answered + ESCROW_RULES.arbitration_window_s - 10)
    with pytest.raises(TransactionReverted, match="in arbitration"):
        await escrow.claim(seller, deal)  # the arbiter's whole window counts from the answer
    await _at(chain, answered + ESCROW_RULES.arbitration_window_s)
    with pytest.raises(TransactionReverted, match="not refundable"):
        await escrow.refund(buyer, deal)
    await escrow.claim(seller, deal)
    assert await funds(chain, seller.address) == 10_000


async def test_the_arbiter_has_a_whole_window_after_an_answer_at_the_last_moment(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    """Issue 49: the answer deadline and the undecided claim were both counted from the commitment,
    so a seller that answered near the end of its window could claim seconds later, before the
    arbiter could judge, and be paid for wrong content. Now the seller has the arbitration window
    from the dispute to answer, and the arbiter the same window from the answer."""
    buyer, seller = parties
    rules = ESCROW_RULES
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    await chain.fund(ARBITER.address, 0)
    await escrow.lock(buyer, deal)
    await escrow.commit(seller, deal, SEALED)
    committed = (await escrow.status(deal)).since
    await _at(chain, committed + rules.dispute_window_s - 20)  # the buyer disputes late in its window
    await escrow.dispute(buyer, deal)
    await _at(chain, committed + rules.dispute_window_s + rules.arbitration_window_s - 40)
    await escrow.answer(seller, deal, b"\4" * 32)  # the seller answers late in its own
    await chain.advance_time(45)
    with pytest.raises(TransactionReverted, match="in arbitration"):
        await escrow.claim(seller, deal)  # before: paid here, the arbiter never had its say
    await escrow.resolve(ARBITER, deal, to_seller=False)
    assert (await escrow.status(deal)).state == "refunded" and await chain.balance(buyer.address) == 5_000_000


async def test_a_dispute_the_seller_never_answers_is_refunded_after_the_arbitration_window(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    buyer, seller = parties
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    await escrow.lock(buyer, deal)
    await escrow.commit(seller, deal, SEALED)
    await escrow.dispute(buyer, deal)
    await chain.advance_time(ESCROW_RULES.arbitration_window_s - 5)  # the seller's window: from the dispute
    with pytest.raises(TransactionReverted, match="in arbitration"):
        await escrow.refund(buyer, deal)
    await chain.advance_time(10)
    with pytest.raises(TransactionReverted, match="arbitration window closed"):
        await escrow.answer(seller, deal, b"\4" * 32)  # too late to answer
    with pytest.raises(TransactionReverted, match="nothing to claim"):
        await escrow.claim(seller, deal)
    await escrow.refund(seller, deal)  # anyone may send it; the money goes to the buyer
    assert (await funds(chain, seller.address), await chain.balance(buyer.address)) == (0, 5_000_000)


async def test_a_permit_front_run_by_someone_else_still_locks(chain: Chain, parties: tuple[Account, Account]) -> None:
    """Finding 9: a permit seen in flight and sent first by another account made the lock revert."""
    buyer, _ = parties
    escrow, deal = Escrow(chain), await terms(chain, *parties)
    v, r, s = await chain.sign_permit(buyer, escrow.address, deal.amount, deal.deadline, None)
    frontrunner = Account.create()
    await chain.fund(frontrunner.address, 0)
    await chain.submit_permit(frontrunner, buyer.address, escrow.address, deal.amount, deal.deadline, (v, r, s))
    await escrow.lock(buyer, deal)  # the allowance the permit made serves the lock
    assert (await escrow.status(deal)).state == "locked"


async def test_locking_more_than_the_balance_moves_nothing(chain: Chain, parties: tuple[Account, Account]) -> None:
    escrow, deal = Escrow(chain), await terms(chain, *parties, amount=6_000_000)
    with pytest.raises(InsufficientFunds):
        await escrow.lock(parties[0], deal)
    assert (await escrow.status(deal)).state == "none" and await chain.balance(parties[0].address) == 5_000_000


async def test_a_lock_on_other_terms_reads_as_no_deal_on_the_quoted_ones(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    buyer, seller = parties
    escrow, quoted = Escrow(chain), await terms(chain, *parties, ahead_s=900)
    nearer = DealTerms(buyer.address, quoted.nonce, seller.address, quoted.amount, HASH, quoted.deadline - 500)
    await escrow.lock(buyer, nearer)
    assert (await escrow.status(quoted)).state == "none"  # what a seller checking the quoted terms sees
    assert (await escrow.status(nearer)).state == "locked"


async def test_released_money_is_owed_to_the_seller_until_it_withdraws_or_spends_it(
    chain: Chain, parties: tuple[Account, Account]
) -> None:
    """Pull payments: a release credits the seller in the escrow (no token transfer); only the seller
    withdraws its credit, never more than it; its own purchases lock out of the credit first."""
    buyer, seller = parties
    escrow, deal = Escrow(chain), await terms(chain, *parties, amount=30_000)
    await escrow.lock(buyer, deal)
    await escrow.release(buyer, deal)
    assert (await escrow.owed(seller.address), await chain.balance(seller.address)) == (30_000, 0)
    with pytest.raises(TransactionReverted, match="not owed that much"):
        await escrow.withdraw(buyer, 1)  # nothing owed to the buyer
    with pytest.raises(TransactionReverted, match="not owed that much"):
        await escrow.withdraw(seller, 30_001)
    await escrow.withdraw(seller, 10_000)
    assert (await escrow.owed(seller.address), await chain.balance(seller.address)) == (20_000, 10_000)

    # The seller buys from the buyer: the lock draws on its credit, its wallet pays only gas.
    purchase = await terms(chain, seller, buyer, amount=15_000)
    await escrow.lock(seller, purchase)
    assert (await escrow.status(purchase)).state == "locked"
    assert (await escrow.owed(seller.address), await chain.balance(seller.address)) == (5_000, 10_000)
    # Credit short of the amount: the wallet pays, the credit stays (no allowance yet: a permit).
    dearer = await terms(chain, seller, buyer, amount=6_000)
    await escrow.lock(seller, dearer)
    assert (await escrow.owed(seller.address), await chain.balance(seller.address)) == (5_000, 4_000)


async def test_a_sender_without_ether_for_gas_gets_that_reason(chain: Chain) -> None:
    """A transaction the chain refuses before mining was re-run as a call, which then passed:
    "reverted on chain" with no reason."""
    penniless = Account.create()  # never funded
    with pytest.raises(InsufficientFunds, match=f"{penniless.address} has too little ether for the gas"):
        await Escrow(chain).withdraw(penniless, 1)
