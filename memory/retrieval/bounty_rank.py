"""A bounty's priority boost in search: a hit that answered a bounty ranks higher, never above the person.

A knowledge crystal that answered a bounty (``Crystal.bounty``) has its score multiplied by the
bounty's priority boost (``memory.model.bounty_boost``: at most 1.2). A bounty is anyone's to post,
with any reward, so the boost is bounded twice: by the formula, and here, where a boosted hit that
is not the person's own words stops just below every hit of the person's that outscored it before
the boost. It reorders hits the query already found and the caller may see; it adds none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from ground.authority import Speaker
from memory.retrieval.later_first import Scored


def boost_of(entry: Scored) -> float:
    bounty = entry.crystal.bounty
    return bounty.priority_boost if bounty is not None else 1.0


def with_bounty_boosts(scored: Sequence[Scored]) -> list[Scored]:
    """``scored`` with each score times its bounty's boost, capped below the person's better hits;
    in the order of the new scores (then rowid)."""
    ranked = sorted(scored, key=lambda s: (-s.final, s.rowid))
    ceiling = math.inf  # the lowest boosted score of the person's hits ranked above, so far
    out = []
    for entry in ranked:
        boosted = entry.final * boost_of(entry)
        if entry.crystal.speaker is Speaker.PERSON:
            ceiling = min(ceiling, boosted)
        elif boosted >= ceiling:
            boosted = max(entry.final, math.nextafter(ceiling, 0.0))
        out.append(replace(entry, final=boosted, bounty=boosted / entry.final) if boosted != entry.final else entry)
    return sorted(out, key=lambda s: (-s.final, s.rowid))
