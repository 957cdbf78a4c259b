"""Who relays for strangers (issue 48): only a node with ``[p2p] relay_service`` on. A default node
refuses a reservation (its HOP protocol is not served), a relaying node grants one. Real hosts on
loopback; the asking node says it is private, so it asks its bootstrap peer for a slot at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from crypto.anchors import TrustAnchors
from crypto.identity import Identity
from marketplace.gossip.kinds import every_kind
from p2p.host import P2PHost
from p2p.network.settings import LOOPBACK, HostSettings
from p2p.penalties import PenaltyBox
from p2p.validation import MessageValidator

pytestmark = pytest.mark.slow  # real hosts


def _host(settings: HostSettings) -> P2PHost:
    return P2PHost(Identity.generate(), MessageValidator(TrustAnchors(), kinds=every_kind()), PenaltyBox(), settings)


async def _answer_of(relay_settings: dict[str, Any]) -> dict[str, list[str]]:
    """What a private node's reservation on a node with ``relay_settings`` came to."""
    relay = _host(HostSettings(listen=LOOPBACK, **relay_settings))
    await relay.start()
    asker = _host(HostSettings(listen=LOOPBACK, bootstrap=[relay.listen_addrs[0]], reachability="private"))
    try:
        await asker.start()
        async with asyncio.timeout(60):  # a bound on a hung request, not a time to meet
            while not (asker.traversal()["reserved_on"] or asker.traversal()["refused_by"]):  # noqa: ASYNC110
                await asyncio.sleep(0.1)
        nat = asker.traversal()
        return {"reserved_on": nat["reserved_on"], "refused_by": nat["refused_by"], "relay": [relay.peer_id]}
    finally:
        await asker.stop()
        await relay.stop()


async def test_a_default_node_refuses_a_reservation() -> None:
    answer = await _answer_of({"reachability": "public"})
    assert answer["reserved_on"] == [] and answer["refused_by"] == answer["relay"]


async def test_a_node_with_relay_service_grants_a_reservation() -> None:
    answer = await _answer_of({"relay_service": True, "reachability": "public"})
    assert answer["reserved_on"] == answer["relay"] and answer["refused_by"] == []
