"""Finding the listing a buyer names (marketplace/desk/lookup.py), on a real store."""

from __future__ import annotations

import pytest

from crypto.identity import Identity
from crypto.peer_id import peer_id_from_ed25519
from marketplace.desk.lookup import find_listing, seller_addrs
from marketplace.errors import InvalidValue, ListingNotFound
from marketplace.gossip.listing import record_listing
from memory.intake.store import IntakeStore
from node.error_status import http_status
from tests.p2p.conftest import NOW, listing, skill_envelope

ONE, TWO, ME = (Identity.from_seed(bytes([n]) * 32) for n in (1, 2, 3))
SKILL = "ops.rotate-logs"


async def _listed_by(store: IntakeStore, *sellers: Identity) -> None:
    for seller in sellers:
        item = listing(content=None, seller_addrs=(f"/ip4/10.0.0.{seller.public_key[0]}/tcp/4001",))
        assert await record_listing(store, item, skill_envelope(seller, NOW, item))


async def test_a_buyer_never_finds_its_own_listing(store: IntakeStore) -> None:
    await _listed_by(store, ONE, TWO)
    row = await find_listing(store, SKILL, me_hex=ONE.public_key.hex())  # one other seller left: no need to name it
    assert row.seller == TWO.public_key.hex()
    assert await seller_addrs(store, row) == [f"/ip4/10.0.0.{TWO.public_key[0]}/tcp/4001"]


async def test_a_skill_several_sell_must_name_its_seller(store: IntakeStore) -> None:
    await _listed_by(store, ONE, TWO)
    with pytest.raises(InvalidValue, match="listed by 2 sellers; name one") as refused:
        await find_listing(store, SKILL, me_hex=ME.public_key.hex())
    for seller in (ONE, TWO):
        assert f"{peer_id_from_ed25519(seller.public_key)}/{SKILL}" in str(refused.value)
    named = await find_listing(store, f"{peer_id_from_ed25519(TWO.public_key)}/{SKILL}", me_hex=ME.public_key.hex())
    assert named.seller == TWO.public_key.hex()


async def test_a_name_nobody_lists_is_not_found_and_answers_404(store: IntakeStore) -> None:
    await _listed_by(store, ONE)
    with pytest.raises(ListingNotFound, match=r"no live listing of 'db\.vacuum' from another node") as missing:
        await find_listing(store, "db.vacuum", me_hex=ME.public_key.hex())
    with pytest.raises(ListingNotFound):
        await find_listing(store, SKILL, me_hex=ONE.public_key.hex())  # its only seller is the buyer itself
    # A MarketError answers 400; this one is the caller's miss, as the node's NotFoundHere was: 404.
    assert http_status(missing.value) == 404
