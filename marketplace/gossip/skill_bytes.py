"""What binds a sold, endorsed or revoked skill to its text: the hash of its exact bytes.

Memory's ``content_hash`` is for dedup: it folds Unicode forms and collapses whitespace, so that a
note typed twice is stored once. A skill is code an agent runs, and there whitespace is meaning:
``# note\\nrm -rf ~/`` and ``# note rm -rf ~/`` collapse to one text, and an endorsement of the
commented-out line passed as the endorsement of the live one (issue 49). Every hash the market
signs, checks or compares (a listing's ``content_hash``, a delivery and a commitment checked
against it, the arbiter's judgement, an endorsement) is ``skill_hash``: SHA-256 of the text's
UTF-8 bytes, nothing normalised. Not even line endings: a carriage return is part of the word
before it for a shell (``cd dir\\r`` fails), so two texts that differ there do not run alike;
the bytes a buyer stores are the bytes it checked.

A listing, endorsement or deal made with the old, collapsed hash still reads (nothing in the
wire format changed), and it matches exactly when the text had no whitespace to collapse and no
Unicode to fold, as most one-line skills do. Any other fails closed: the delivery does not match
the listing and is not released (the escrow refunds or the arbiter decides, with this hash), and
the endorsement names no text: the seller lists the skill again and its endorser endorses it again.
"""

from __future__ import annotations

import hashlib

from memory.model import Crystal
from memory.storage.crystal_queries import by_content_hash, skill_crystal_ids
from memory.storage.store import MemoryStore


def skill_hash(text: str) -> str:
    """SHA-256 (hex) of ``text``'s exact UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def crystals_with_bytes(store: MemoryStore, stable_skill_id: str, chash: str) -> list[Crystal]:
    """The crystals of skill ``stable_skill_id`` (any source, version or lifecycle) whose text is
    exactly the one ``chash`` names."""
    found = []
    for crystal_id in await skill_crystal_ids(store, stable_skill_id):
        crystal = await store.get(crystal_id)
        if skill_hash(crystal.text) == chash:
            found.append(crystal)
    return found


async def held_skill(store: MemoryStore, stable_skill_id: str, chash: str) -> Crystal | None:
    """A crystal holding exactly the text ``chash`` names: one of the skill's own crystals, else the
    crystal memory dedups that text into, if its bytes are those (a text with nothing to fold
    hashes alike both ways)."""
    for crystal in await crystals_with_bytes(store, stable_skill_id, chash):
        return crystal
    deduped = await by_content_hash(store, chash)
    return deduped if deduped is not None and skill_hash(deduped.text) == chash else None
