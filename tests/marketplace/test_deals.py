"""Purchases and sales move only along their state machines, and every move is written."""

from __future__ import annotations

import pytest

from marketplace.chain_types import EscrowRules
from marketplace.exchange.deals import (
    PURCHASE_MOVES,
    SALE_MOVES,
    IllegalTransition,
    Purchases,
    PurchaseState,
    Sales,
    SaleState,
)
from marketplace.exchange.party import DeadlineBounds
from marketplace.exchange.quote_slots import OpenQuotes
from memory.intake.store import IntakeStore

PID = bytes(range(32))
SELLER = b"s" * 32


def reachable(moves: dict[PurchaseState, frozenset[PurchaseState]], start: PurchaseState) -> set[PurchaseState]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in moves[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_every_purchase_state_is_reachable_from_a_quote_and_the_ends_lead_nowhere() -> None:
    assert reachable(dict(PURCHASE_MOVES), PurchaseState.QUOTED) == set(PurchaseState)
    for end in (PurchaseState.COMPLETED, PurchaseState.REFUNDED, PurchaseState.EXPIRED, PurchaseState.STALE):
        assert PURCHASE_MOVES[end] == frozenset()
    # failed leads on only where the chain holds the money after all (or it is an earlier release's: set aside)
    assert PURCHASE_MOVES[PurchaseState.FAILED] == {
        PurchaseState.LOCKED,
        PurchaseState.COMPLETED,
        PurchaseState.REFUNDED,
        PurchaseState.STALE,
        PurchaseState.DISPUTED,
        PurchaseState.LOST,
    }
    assert set(SALE_MOVES) == set(SaleState)


async def test_a_purchase_moves_along_its_machine_and_an_illegal_move_changes_nothing(store: IntakeStore) -> None:
    purchases = Purchases(store)
    await purchases.add(PID, SELLER, "peer", b"quote", "escrow")
    await purchases.move(PID, PurchaseState.LOCKED)
    await purchases.move(PID, PurchaseState.REFUSED, "delivery refused: wrong hash")
    with pytest.raises(IllegalTransition, match="from refused to expired"):
        await purchases.move(PID, PurchaseState.EXPIRED, "should not stick")
    record = await purchases.get(PID)
    assert record is not None and record.state is PurchaseState.REFUSED
    assert record.detail == "delivery refused: wrong hash"
    await purchases.move(PID, PurchaseState.REFUNDED, keep_detail=True)  # why it was refunded is kept
    record = await purchases.get(PID)
    assert record is not None and (record.state, record.detail) == (
        PurchaseState.REFUNDED,
        "delivery refused: wrong hash",
    )
    assert await purchases.outcomes_by_seller() == {SELLER.hex(): (0, 1)}
    with pytest.raises(IllegalTransition, match="never recorded"):
        await purchases.move(b"\0" * 32, PurchaseState.LOCKED)


async def test_a_sale_is_settled_once_and_its_quote_dropped_only_while_unpaid(store: IntakeStore) -> None:
    sales = Sales(store)
    await sales.add_quote(PID, b"b" * 32, "crystal-1", b"quote", buyer_address="0xAB" + "00" * 19)
    assert await sales.open_quotes(b"b" * 32, since_ms=0) == OpenQuotes(
        total=1, yours=1, strangers=0, unproven=1, wallet=0
    )
    await sales.move(PID, SaleState.DELIVERED)
    await sales.drop_unpaid_quote(PID)  # delivered: kept
    await sales.move(PID, SaleState.DEFAULTED)
    with pytest.raises(IllegalTransition, match="from defaulted to paid"):
        await sales.move(PID, SaleState.PAID)
    assert await sales.defaulted_by(b"b" * 32) == PID
    # The same wallet under a fresh node key is the same defaulter.
    assert await sales.defaulted_by(b"c" * 32, "0xab" + "00" * 19) == PID
    assert await sales.defaulted_by(b"c" * 32, "0xcd" + "00" * 19) is None
    assert await sales.count_by_state() == {"defaulted": 1}


def test_deadline_bounds_must_lie_within_the_escrows() -> None:
    rules = EscrowRules("0x" + "00" * 20, min_delivery_window_s=300, max_lock_s=86_400, dispute_window_s=3_600,
                        arbitration_window_s=604_800)  # fmt: skip
    assert DeadlineBounds(300, 86_400).outside(rules) is None
    assert DeadlineBounds(600, 3_600).outside(rules) is None  # stricter than the escrow: fine
    too_near = DeadlineBounds(120, 86_400).outside(rules)
    assert too_near is not None and "the escrow only 300-86400 s" in too_near
    assert DeadlineBounds(300, 172_800).outside(rules) is not None
    assert DeadlineBounds(300, 86_400).refusal(1_000 + 299, 1_000) is not None  # a quote 299 s away
    assert DeadlineBounds(300, 86_400).refusal(1_000 + 300, 1_000) is None
