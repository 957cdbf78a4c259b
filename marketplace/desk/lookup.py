"""Finding the listing a buyer names, and where its seller listens: what a purchase starts from.

A buyer names a listing by its stable skill id, or ``<seller peer id>/<skill id>`` when several
sellers list it; its own listings are never a candidate.
"""

from __future__ import annotations

from crypto.envelope import decode_envelope
from crypto.peer_id import peer_id_from_ed25519
from marketplace.catalog.listings import ListingRow, listing_envelope, live_listings
from marketplace.errors import InvalidValue, ListingNotFound
from marketplace.gossip.listing import LISTING, SkillListing
from memory.storage.store import MemoryStore

#: Listings are stored after validation under the gossip size bound; this only bounds the decode.
_MAX_LISTING_BYTES = 1_000_000


def seller_peer_id(row: ListingRow) -> str:
    """The libp2p peer id of a listing's seller."""
    return peer_id_from_ed25519(bytes.fromhex(row.seller))


async def find_listing(store: MemoryStore, wanted: str, *, me_hex: str) -> ListingRow:
    """The one live listing of another node that ``wanted`` names, or why there is none:
    ``ListingNotFound``, or ``InvalidValue`` naming each seller when the name fits several."""
    seller_peer, _, skill_id = wanted.rpartition("/")
    rows = [
        r
        for r in await live_listings(store)
        if r.stable_skill_id == skill_id
        and r.seller != me_hex
        and (not seller_peer or seller_peer_id(r) == seller_peer)
    ]
    if not rows:
        raise ListingNotFound(f"no live listing of {wanted!r} from another node (see `bitterbot-node skills list`)")
    if len(rows) > 1:
        sellers = ", ".join(f"{seller_peer_id(r)}/{skill_id}" for r in rows)
        raise InvalidValue(f"{skill_id} is listed by {len(rows)} sellers; name one: {sellers}")
    return rows[0]


async def stored_listing(store: MemoryStore, seller_hex: str, skill_id: str) -> SkillListing | None:
    """The signed listing of ``skill_id`` by ``seller_hex`` as stored here, or None."""
    wire = await listing_envelope(store, seller_hex, skill_id)
    if wire is None:
        return None
    return LISTING.parse(decode_envelope(wire, max_bytes=_MAX_LISTING_BYTES).body_map())


async def seller_addrs(store: MemoryStore, row: ListingRow) -> list[str]:
    """Where the listing says its seller listens (a buyer not connected to it can still dial it)."""
    listing = await stored_listing(store, row.seller, row.stable_skill_id)
    return list(listing.seller_addrs) if listing is not None else []
