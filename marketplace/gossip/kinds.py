"""The market's gossip kinds, found in this folder's modules (each declares its ``SPOKEN``) and
registered together by the market part with their consumers; and every kind a node speaks, for
hosts that only validate and forward."""

from __future__ import annotations

import importlib
import pkgutil
from functools import partial
from typing import Any

import marketplace.gossip
from marketplace.gossip.sink import MarketKind, MarketSink
from p2p.kinds import GossipKind, GossipKinds
from p2p.trust.attestation import ATTESTATION_KIND
from p2p.weather import WeatherSequences, weather_kind


def _spoken() -> tuple[MarketKind, ...]:
    """What the modules of this folder declare as ``SPOKEN``, by kind name (the order is the same on
    every node, whatever order the file system lists them in)."""
    found = []
    for module in pkgutil.iter_modules(marketplace.gossip.__path__):
        declared = getattr(importlib.import_module(f"marketplace.gossip.{module.name}"), "SPOKEN", None)
        if isinstance(declared, MarketKind):
            found.append(declared)
    return tuple(sorted(found, key=lambda spoken: spoken.kind.name))


SPOKEN_HERE = _spoken()
#: Every kind the market speaks, for a node (or a test) that validates them without consuming.
MARKET_KINDS: tuple[GossipKind[Any], ...] = tuple(spoken.kind for spoken in SPOKEN_HERE)


def register_market_gossip(kinds: GossipKinds, sink: MarketSink) -> None:
    """Speak the market's kinds, each consumed into ``sink``."""
    for spoken in SPOKEN_HERE:
        kinds.register(spoken.kind, partial(spoken.consume, sink))


def every_kind(weather: WeatherSequences | None = None) -> GossipKinds:
    """Every kind a node speaks, none consumed: for a host that only validates and forwards (a relay,
    a benchmark's node, a test). Weather is judged stale against ``weather`` (fresh when None)."""
    kinds = GossipKinds()
    spoken: tuple[GossipKind[Any], ...] = (weather_kind(weather or WeatherSequences()), ATTESTATION_KIND, *MARKET_KINDS)
    for kind in spoken:
        kinds.register(kind)
    return kinds
