"""Content from peers as it enters memory (a free skill from gossip, a bought one from a seller).

A crystal from a peer has origin ``peer``, ``source = "peer:<author key hex>"`` (so versions and
revocations are matched to their publisher only) and the attribution ``created`` by
``peer:<key>``. It is held in quarantine (``memory.governance.quarantine``) when its author has no
standing here (below ``trusted``) or when its text reads like instructions to the agent
(``memory.governance.injection``), whoever sent it. The peer content quotas
(``memory.governance.peer_quota``) rank authors by ``standing_by_source``.
"""

from __future__ import annotations

from collections.abc import Callable

from memory.governance.injection import instruction_flags
from memory.governance.peer_quota import Standing
from memory.model import Quarantine


def standing_by_source(standing_of_hex: Callable[[str], tuple[int, float]]) -> Standing:
    """A quota's ranking of sources (``peer:<key hex>``) from a ranking of hex keys (``TrustBook.standing_of``)."""

    def standing(source: str) -> tuple[int, float]:
        return standing_of_hex(source.removeprefix("peer:"))

    return standing


def alike(source: str) -> tuple[int, float]:
    """Every author ranked alike (so the quotas evict oldest first)."""
    return (0, 0.0)


def hold_reason(text: str, *, author_has_standing: bool) -> Quarantine | None:
    """Why content from a peer must wait for the person, or None when the agent may see it."""
    flags = instruction_flags(text)
    if flags:
        return Quarantine(f"reads like instructions to the agent ({', '.join(flags)})", flags)
    if not author_has_standing:
        return Quarantine("its author is not trusted here yet")
    return None


def peer_source(author: bytes) -> str:
    return f"peer:{author.hex()}"
