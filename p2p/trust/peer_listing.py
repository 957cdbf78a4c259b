"""What `peers` lists: connected peers and those this node has evidence or attestations about, with
trust level, scores and penalty points as of the last trust round. Pure: no I/O, no recomputation."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from crypto.peer_id import ed25519_from_peer_id, peer_id_from_ed25519

if TYPE_CHECKING:  # describing the listing's bound (the peers command) must not load libp2p or numpy
    from p2p.host import PeerSnapshot
    from p2p.trust.book import TrustBook, TrustLevel

PEERS_LISTED = 500  # rows `peers` returns unless asked for a limit


def peer_rows(
    connected: Iterable[PeerSnapshot],
    book: TrustBook,
    level_of: Callable[[bytes], TrustLevel],
    *,
    limit: int = PEERS_LISTED,
) -> list[dict[str, Any]]:
    """Connected (or banned) peers first, then by combined trust, at most ``limit`` rows. ``level_of``
    names the level of a key the last trust round did not cover (the validator's view)."""
    computed = book.last.peers
    rows: dict[str, dict[str, Any]] = {}

    def row(peer_id: str, key: bytes | None) -> dict[str, Any]:
        trust = computed.get(key) if key else None
        level = trust.level if trust else (level_of(key) if key else _provisional())
        return {
            "peer_id": peer_id,
            "connected": False,
            "banned_until_ms": None,
            "penalty_points": 0.0,
            "addrs": [],
            "connection": None,  # "direct" or "relayed" (through a circuit relay) while connected
            "level": level.value,
            "local": trust.local if trust else 0.0,
            "global": trust.global_ if trust else 0.0,
            "combined": trust.combined if trust else 0.0,
        }

    for snap in connected:
        entry = row(snap.peer_id, ed25519_from_peer_id(snap.peer_id))
        entry.update(
            connected=snap.banned_until_ms is None,
            banned_until_ms=snap.banned_until_ms,
            penalty_points=snap.penalty_points,
            addrs=list(snap.addrs),
            connection=None if snap.banned_until_ms is not None else ("relayed" if snap.relayed else "direct"),
        )
        rows[snap.peer_id] = entry
    for key in set(book.outcomes) | set(book.attestations):
        peer_id = peer_id_from_ed25519(key)
        rows.setdefault(peer_id, row(peer_id, key))
    ordered = sorted(rows.values(), key=lambda r: (not r["connected"], -r["combined"], r["peer_id"]))
    return ordered[:limit]


def _provisional() -> TrustLevel:
    from p2p.trust.book import TrustLevel

    return TrustLevel.PROVISIONAL
