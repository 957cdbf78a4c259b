"""The P2P package owns its settings: each TOML table is the union of the components it configures,
so what a person writes reaches the component as written, with nothing mapping one onto the other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from node.config_loading import load_config
from node.errors import ConfigError
from p2p.network.bounds import ConnectionBounds
from p2p.network.resources import connection_config
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.settings import P2PSettings
from p2p.trust.book import TrustBook

ROOT = Path(__file__).resolve().parents[2]


def test_a_key_set_in_the_environment_reaches_the_component_that_reads_it() -> None:
    variables = {
        "BITTERBOT_P2P__CONNECTIONS_PER_PEER": "3",
        "BITTERBOT_P2P__BAN_MINUTES": "2.5",
        "BITTERBOT_TRUST__MAX_TRACKED_PEERS": "150",
        "BITTERBOT_WIRE__MAX_AGE_S": "120",
    }
    config = load_config(None, variables).config
    # The library's own connection config, built from the [p2p] table itself.
    assert connection_config(config.p2p).max_connections_per_peer == 3
    assert PenaltyBox(config.p2p).settings.ban_ms == 150_000
    book = TrustBook(b"\x01" * 32, frozenset(), config.trust, floors=config.trust)
    assert book.limits.max_tracked_peers == 150
    assert config.wire.max_age_ms == 120_000


def test_the_p2p_table_takes_exactly_its_components_keys_and_its_own() -> None:
    components = {key for base in P2PSettings.__mro__[1:] for key in getattr(base, "model_fields", {})}
    own = set(P2PSettings.model_fields) - components
    assert {"enabled", "weather_renew_s", "trust_file", "peers_file"} <= own
    assert set(ConnectionBounds.model_fields) <= set(P2PSettings.model_fields)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        P2PSettings(max_inbound=4)  # type: ignore[call-arg]  # the component's old name is no key


def test_checks_between_keys_hold_on_the_component_and_name_the_keys() -> None:
    with pytest.raises(ValidationError, match="need degree_low <= degree <= degree_high"):
        HostSettings(listen=LOOPBACK, degree=3, degree_low=4)
    with pytest.raises(ValidationError, match="need max_inbound_connections <= max_connections"):
        ConnectionBounds(max_connections=16, max_inbound_connections=17)
    with pytest.raises(ConfigError, match="weather_renew_s is 0"):
        load_config(None, {"BITTERBOT_P2P__WEATHER_RENEW_S": "1.5"})


def test_reading_the_config_loads_none_of_the_network_libraries() -> None:
    """The tables are built from the components' settings, so each lives in a module of its own that
    imports no more than pydantic: every CLI command reads the config, and the first cut of this
    change made that load numpy, trio and multiaddr (0.3 s to 0.75 s)."""
    heavy = ("numpy", "trio", "multiaddr", "libp2p", "psutil")
    probe = f"import sys, node.config; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"
