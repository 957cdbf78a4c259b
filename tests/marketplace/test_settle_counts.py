"""A settlement round's counts are keyed by the state's name (issue 32: the log read
``{<SaleState.PAID: 'paid'>: 1}``)."""

from __future__ import annotations

import json

from marketplace.exchange.deals import PurchaseState, SaleState
from marketplace.exchange.party import StuckDeals


def test_counts_by_new_state_are_plain_names() -> None:
    changed: dict[str, int] = {}
    stuck = StuckDeals()
    stuck.note(changed, b"\x01" * 32, SaleState.DELIVERED, SaleState.PAID)
    stuck.note(changed, b"\x02" * 32, PurchaseState.LOCKED, PurchaseState.LOCKED)  # no change: not counted
    assert changed == {"paid": 1}
    assert all(type(key) is str for key in changed)
    assert "SaleState" not in str(changed) and json.loads(json.dumps(changed)) == {"paid": 1}
