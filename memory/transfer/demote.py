"""An export no trusted key vouches for, stored as what it is: text from a file (``Road.FOREIGN_EXPORT``).

Such a file may say anything about its crystals: that the person said them, that they are
directives, pinned for good, released from quarantine, or that they replace crystals already here.
None of it is taken. Each crystal goes through the store's ordinary intake as an imported file's
text does: a new id, the speaker ``ground.authority.ROADS`` gives the road, typed and layered here
(so never a directive), decaying, at the default importance. What the file says only narrows it:
a stricter sensitivity, an archived lifecycle, a quarantine hold. Text from a peer, or held when it
was exported, is held here for the person.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ground.authority import ROADS, Road
from memory.governance.injection import instruction_flags
from memory.intake.store import IntakeStore
from memory.model import Crystal, Lifecycle, NewCrystal, Origin, Quarantine
from memory.sensitivity import stricter
from memory.storage.connection import select_in

_HELD_WHEN_EXPORTED = "held when it was exported, in an export this node did not sign"
_FROM_A_PEER = "from a peer, in an export this node did not sign"


def as_imported_text(crystal: Crystal, path: Path, now_ms: int) -> NewCrystal:
    """What an unvouched-for export's crystal is stored as (pure)."""
    held = crystal.quarantined or crystal.origin is Origin.PEER
    speaker = ROADS[Road.FOREIGN_EXPORT]
    assert speaker is not None  # a foreign export has a fixed speaker; only our own keeps each word's
    return NewCrystal(
        crystal.text,
        origin=Origin.INDEXED,
        speaker=speaker,
        # A time the content refers to; never later than now, so a file cannot rank first by recency.
        created_at_ms=min(crystal.created_at_ms, now_ms),
        source_path=str(path)[:1000],
        source="import",
        sensitivity=stricter(crystal.sensitivity, crystal.text),
        context=crystal.context,
        tags=crystal.tags,
        quarantine=Quarantine(
            _HELD_WHEN_EXPORTED if crystal.quarantined else _FROM_A_PEER, instruction_flags(crystal.text)
        )
        if held
        else None,
        actor="import",
    )


@dataclass(frozen=True, slots=True)
class DemotedBatch:
    ids: tuple[str, ...]  # in the batch's order: the crystal each record is in this store now
    fresh: frozenset[str]  # the ones this batch created (every other was here already)


async def store_demoted(store: IntakeStore, batch: list[Crystal], path: Path) -> DemotedBatch:
    """Store ``batch`` as imported text; a text already here stays as it is (the file's copy counts
    as known). What the file archived is archived here too: archiving only lowers."""
    if not batch:
        return DemotedBatch((), frozenset())
    now = store.now_ms()
    news = [as_imported_text(c, path, now) for c in batch]
    before = {
        r[0]
        for r in await select_in(
            store.reader(), "SELECT id FROM crystals WHERE content_hash IN ({marks})", [c.content_hash for c in batch]
        )
    }
    result = await store.remember_many(news)
    fresh = frozenset(result.ids) - before
    archived = {cid for c, cid in zip(batch, result.ids, strict=True) if c.lifecycle is Lifecycle.ARCHIVED}
    for cid in sorted(archived & fresh):
        await store.transition(cid, Lifecycle.ARCHIVED, reason="archived in the imported export", actor="import")
    return DemotedBatch(result.ids, fresh)
