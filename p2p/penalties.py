"""Peer penalties: points from rejected messages, decaying with time; past the threshold a ban.

``p2p.validation.POLICY`` says how many points each rejection costs the peer that
forwarded it. Points halve every ``HALF_LIFE_MS`` so an honest peer that once relayed
something odd recovers; a peer that reaches ``penalty_threshold`` is disconnected and banned
for ``ban_minutes``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from ground.settings import Section

#: Points halve in this time.
HALF_LIFE_MS = 60_000


class PenaltySettings(Section):
    penalty_threshold: int = Field(default=100, ge=10, le=100_000)
    """Penalty points (from rejected messages, halving every minute) at which a peer is
    disconnected and banned, and for how long.
    """
    ban_minutes: float = Field(default=10.0, gt=0, le=10_080)

    @property
    def ban_ms(self) -> int:
        return int(self.ban_minutes * 60_000)


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
        decay: float = 0.5 ** (max(0, now_ms - standing.at_ms) / HALF_LIFE_MS)
        return standing.points * decay

    def penalize(self, peer: str, points: int, now_ms: int) -> bool:
        """Add points; True when this pushes the peer over the threshold (ban it now)."""
        if points <= 0 or self.is_banned(peer, now_ms):
            return False
        total = self.points(peer, now_ms) + points
        self._standing[peer] = _Standing(total, now_ms)
        if total >= self.settings.penalty_threshold:
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
