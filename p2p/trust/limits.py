"""What strangers can make this node remember about trust (``[trust]``; ``p2p.trust.book`` keeps to
it). A module of its own: reading the config must not load the book's EigenTrust and numpy."""

from __future__ import annotations

from pydantic import Field

from ground.settings import Section


class TrustLimits(Section):
    """What strangers can make this node remember about trust, and how long EigenTrust may run."""

    max_attesters: int = Field(default=256, ge=1, le=100_000)
    """Attestations kept from other nodes (the input of EigenTrust). Only a management key's, or a
    trusted peer's on this node's own evidence, count; when full, the attester with the least
    standing makes room. [1, 100000].
    """
    max_ratings_per_attester: int = Field(default=256, ge=1, le=256)
    """Ratings kept from each attestation, its strongest first. [1, 256]."""
    max_tracked_peers: int = Field(default=10_000, ge=100, le=1_000_000)
    """Peer keys whose outcomes (valid or invalid messages, executions, purchases) are kept; past
    that, those with the least evidence are forgotten first. [100, 1000000].
    """
    eigentrust_budget_s: float = Field(default=2.0, gt=0, le=60)
    """Seconds one EigenTrust computation may take (it runs off the event loop). (0, 60]."""

    def max_file_bytes(self) -> int:
        """A trust file larger than the limits allow is not ours to load (about 200 bytes a rating)."""
        return 1_000_000 + 200 * (self.max_attesters * self.max_ratings_per_attester + self.max_tracked_peers)
