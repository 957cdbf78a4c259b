"""The marketplace's settings (marketplace/settings.py): the TOML tables people write reach each
component whole, with no mapping between them."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ground.authority import Speaker
from marketplace.exchange.spending import purchase_cap
from marketplace.limits import DeadlineBounds, SellerLimits, SpendLimits
from marketplace.pricing import PriceInputs, PriceSettings, price
from marketplace.settings import ChainSettings, MarketplaceSettings
from node.config_loading import load_config
from node.errors import ConfigError

TOML = """
[marketplace]
base_price_micro_usdc = 20000
max_purchase_micro_usdc = 50000
seller_requests_per_min = 30.0

[chain]
min_delivery_window_s = 600
escrow_window_s = 900
"""


def test_each_table_is_the_union_of_its_components(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text(TOML)
    config = load_config(path, {"BITTERBOT_MARKETPLACE__SELLER_REQUEST_BURST": "9"}).config
    market, chain = config.marketplace, config.chain
    assert isinstance(market, MarketplaceSettings) and isinstance(chain, ChainSettings)
    assert isinstance(market, SellerLimits | SpendLimits | PriceSettings) and isinstance(chain, DeadlineBounds)
    assert (market.seller_requests_per_min, market.seller_request_burst) == (30.0, 9)  # the file, the environment
    # Handed whole to the components: pricing, the purchase ceiling and the deadline bounds read their keys.
    assert price(PriceInputs(executions=3, successes=3, reward_sum_milli=3000), market).base_micro_usdc == 20_000
    cap = purchase_cap(Speaker.PERSON, skill="s", price=40_000, max_price=None, limits=market, spent_today=0)
    assert cap == 50_000
    assert chain.refusal(1_000 + 599, 1_000) is not None and chain.refusal(1_000 + 600, 1_000) is None


def test_a_table_refuses_what_its_components_refuse(tmp_path: Path) -> None:
    path = tmp_path / "node.toml"
    path.write_text("[marketplace]\nmin_price_micro_usdc = 5000\nbase_price_micro_usdc = 1000\n")
    with pytest.raises(ConfigError, match="min_price_micro_usdc <= base_price_micro_usdc"):
        load_config(path, {})
    with pytest.raises(ValidationError, match="seller_requests_per_min"):
        SellerLimits(seller_requests_per_min=0)
    with pytest.raises(ValidationError, match="escrow_window_s"):
        ChainSettings(escrow_window_s=120)  # nearer than min_delivery_window_s (300)
