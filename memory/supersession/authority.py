"""Who may replace whose statement (pure): only the person's own words outrank the person.

A crystal is the person's when the person typed it (origin ``user_input``), when it is a
directive, or when someone pinned it. Text from anywhere else (an agent's session, an indexed
file, a dream, a peer) may not hide it, however clearly it speaks of change: it only flags it
"maybe outdated", for the person to review (``memory show``, the dashboard), who then supersedes
it by hand or says it again. Everything else may replace everything else that is not a peer's.
"""

from __future__ import annotations

from memory.model import Crystal, EpistemicLayer, Lifespan, Origin


def is_the_persons(crystal: Crystal) -> bool:
    return (
        crystal.origin is Origin.USER_INPUT
        or crystal.epistemic_layer is EpistemicLayer.DIRECTIVE
        or crystal.lifespan is Lifespan.PERMANENT
    )


def may_supersede(new: Crystal, old: Crystal) -> bool:
    """Whether ``new`` may hide ``old`` from search and working memory."""
    return new.origin is Origin.USER_INPUT or not is_the_persons(old)
