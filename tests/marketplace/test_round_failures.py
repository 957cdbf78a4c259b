"""Issue 48: the daemon's market round cut off in the middle of a deal (the skill received and
stored, the escrow not yet released; or paid on chain and not yet written down) is restarted by
the supervisor and carries the deal on from what the store and the chain say: the seller is paid
once, the buyer pays once, the skill is stored once."""

from __future__ import annotations

from pathlib import Path

import pytest

from ground import failpoints
from ground.authority import Speaker
from marketplace.chain import Chain
from marketplace.exchange.buyer import PurchaseResult
from memory.intake.store import IntakeStore
from node.runtime.lifecycle import TaskSupervisor
from tests.marketplace.conftest import funds
from tests.marketplace.test_purchase import PRICE, SKILL, SellerKilledBeforeDelivery, close, restart, trade


async def _no_wait(_: float) -> None:
    return None


async def _skill_copies(store: IntakeStore) -> int:
    rows = await store.reader().execute_fetchall("SELECT count(*) FROM crystals WHERE text = ?", (SKILL,))
    return int(next(iter(rows))[0])


@pytest.mark.parametrize("where", ["market:before-release", "market:after-lock"])
async def test_a_market_round_cut_off_mid_deal_carries_it_on_and_pays_once(
    tmp_path: Path, chain: Chain, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    seller, buyer = await trade(tmp_path, chain, SellerKilledBeforeDelivery)
    try:
        if where == "market:after-lock":  # the buy itself is cut off right after paying
            monkeypatch.setenv(failpoints.ENV, f"{where}=1")
            monkeypatch.setattr(failpoints, "_hits", {})
            with pytest.raises(failpoints.FailpointHit):
                await buyer.market.buy(
                    seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
                )
        else:  # the seller was away: the payment waits locked for the round
            waiting = await buyer.market.buy(
                seller.host.peer_id, seller.identity.public_key, "db.pg-upgrade", speaker=Speaker.PERSON
            )
            assert waiting.state == "locked"
            monkeypatch.setenv(failpoints.ENV, f"{where}=1")
            monkeypatch.setattr(failpoints, "_hits", {})
        seller = await restart(seller, chain, "", same_port=True)
        results: list[PurchaseResult] = []
        supervisor = TaskSupervisor(sleep=_no_wait)

        async def market_round() -> None:  # the daemon's round, once
            results.extend(await buyer.market.resume())

        await supervisor.spawn("market-rounds", market_round)
        health = supervisor.health().get("market-rounds")
        if where == "market:before-release":
            assert health is not None and health.restarts == 1 and "FailpointHit" in str(health.last_error)
        assert [r.state for r in results] == ["completed"], [(r.state, r.detail) for r in results]
        assert await funds(chain, seller.wallet.address) == PRICE  # paid exactly once
        assert await chain.balance(buyer.wallet.address) == 1_000_000 - PRICE
        assert await _skill_copies(buyer.store) == 1
        assert await buyer.market.resume() == []  # nothing left to do
    finally:
        await close(buyer, seller)
