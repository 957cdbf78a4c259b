"""The market's gossip kinds are found in their own modules: a kind declared without ``SPOKEN``
would be validated nowhere and consumed by no one, so the finder must see every one."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from typing import Any

import marketplace.gossip
from marketplace.gossip.kinds import MARKET_KINDS, SPOKEN_HERE, register_market_gossip
from p2p.kinds import GossipKind, GossipKinds


def _declared_in_the_folder() -> set[str]:
    """The kinds the folder's modules build (``X = GossipKind(...)``), read from their source."""
    names = set()
    for module in pkgutil.iter_modules(marketplace.gossip.__path__):
        loaded = importlib.import_module(f"marketplace.gossip.{module.name}")
        for node in ast.parse(Path(str(loaded.__file__)).read_text()).body:
            built = isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            if built and getattr(node.value.func, "id", None) == GossipKind.__name__:  # type: ignore[attr-defined]
                names.add(getattr(loaded, node.targets[0].id).name)  # type: ignore[attr-defined]
    return names


def test_every_kind_declared_in_the_folder_is_spoken_and_each_once() -> None:
    spoken = [kind.name for kind in MARKET_KINDS]
    assert sorted(spoken) == sorted(_declared_in_the_folder())
    assert len(set(spoken)) == len(spoken) == 4  # listing, revocation, endorsement, bounty


def test_the_market_part_speaks_every_kind_found() -> None:
    kinds = GossipKinds()
    sink: Any = object()  # only bound to the consumers, none of which runs here
    register_market_gossip(kinds, sink)
    assert [kinds.kind(spoken.kind.name) for spoken in SPOKEN_HERE] == list(MARKET_KINDS)
