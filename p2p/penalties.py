"""Peer penalties: points from rejected messages, decaying with time; past the threshold a ban.

``p2p.validation.POLICY`` says how many points each rejection costs the peer that
forwarded it. Points halve every ``half_life_ms`` so an honest peer that once relayed
something odd recovers; a peer that reaches ``threshold`` is disconnected and banned
until ``ban_ms`` has passed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PenaltySettings:
    threshold: float = 100.0
    half_life_ms: int = 60_000
    ban_ms: int = 600_000


@dataclass(slots=True)
class _Standing:
    points: float
    at_ms: int


class PenaltyBox:
    def __init__(self, settings: PenaltySettings | None = None) -> None:
        self.settings = settings or PenaltySettings()
        self._standing: dict[str, _Standing] = {}
        self._banned_until: dict[str, int] = {}

    def points(self, peer: str, now_ms: int) -> float:
        standing = self._standing.get(peer)
        if standing is None:
            return 0.0
        decay: float = 0.5 ** (max(0, now_ms - standing.at_ms) / self.settings.half_life_ms)
        return standing.points * decay

    def penalize(self, peer: str, points: int, now_ms: int) -> bool:
        """Add points; True when this pushes the peer over the threshold (ban it now)."""
        if points <= 0 or self.is_banned(peer, now_ms):
            return False
        total = self.points(peer, now_ms) + points
        self._standing[peer] = _Standing(total, now_ms)
        if total >= self.settings.threshold:
            self._banned_until[peer] = now_ms + self.settings.ban_ms
            del self._standing[peer]
            return True
        return False

    def is_banned(self, peer: str, now_ms: int) -> bool:
        until = self._banned_until.get(peer)
        return until is not None and now_ms < until

    def expired_bans(self, now_ms: int) -> list[str]:
        """Peers whose ban is over (removed from the box: they start again from zero)."""
        done = [peer for peer, until in self._banned_until.items() if now_ms >= until]
        for peer in done:
            del self._banned_until[peer]
        return done

    def banned(self, now_ms: int) -> dict[str, int]:
        return {peer: until for peer, until in self._banned_until.items() if now_ms < until}
