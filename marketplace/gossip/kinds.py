"""The market's gossip kinds, registered together by the market part with their consumers; and
every kind a node speaks, for hosts that only validate and forward."""

from __future__ import annotations

from functools import partial
from typing import Any

from marketplace.gossip.bounty import BOUNTY_KIND, consume_bounty
from marketplace.gossip.endorsement import ENDORSEMENT_KIND, consume_endorsement
from marketplace.gossip.listing import LISTING_KIND, consume_listing
from marketplace.gossip.revocation import REVOCATION_KIND, consume_revocation
from marketplace.gossip.sink import MarketSink
from p2p.kinds import GossipKind, GossipKinds
from p2p.trust.attestation import ATTESTATION_KIND
from p2p.weather import WeatherSequences, weather_kind

#: Every kind the market speaks, for a node (or a test) that validates them without consuming.
MARKET_KINDS: tuple[GossipKind[Any], ...] = (LISTING_KIND, REVOCATION_KIND, ENDORSEMENT_KIND, BOUNTY_KIND)


def register_market_gossip(kinds: GossipKinds, sink: MarketSink) -> None:
    """Speak the market's kinds, each consumed into ``sink``."""
    kinds.register(LISTING_KIND, partial(consume_listing, sink))
    kinds.register(REVOCATION_KIND, partial(consume_revocation, sink))
    kinds.register(ENDORSEMENT_KIND, partial(consume_endorsement, sink))
    kinds.register(BOUNTY_KIND, partial(consume_bounty, sink))


def every_kind(weather: WeatherSequences | None = None) -> GossipKinds:
    """Every kind a node speaks, none consumed: for a host that only validates and forwards (a relay,
    a benchmark's node, a test). Weather is judged stale against ``weather`` (fresh when None)."""
    kinds = GossipKinds()
    spoken: tuple[GossipKind[Any], ...] = (weather_kind(weather or WeatherSequences()), ATTESTATION_KIND, *MARKET_KINDS)
    for kind in spoken:
        kinds.register(kind)
    return kinds
