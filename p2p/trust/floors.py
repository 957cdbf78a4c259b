"""What this node must have seen of a peer itself before the peer may be ``trusted`` (pure).

Trust decides what skips quarantine and whose attestations count, so it must cost something a
fresh key cannot fake in an afternoon. Scores alone did not: global trust is relative to the best
peer that is not an anchor, so one recorded execution, or one minimum purchase, made a fresh key
``trusted`` wherever it was the best-rated peer. On top of the score, a peer needs evidence of
this node's own, in absolute terms:

- on at least ``trusted_min_days`` distinct days (the relationship has lasted, and was not one burst);
- either ``trusted_min_executions`` successful runs of its skills that the person released (held
  content earns nothing), or ``trusted_min_paid_micro_usdc`` paid to it for purchases that completed.

Verification by a management key is another road (``book._level``), and evidence against a peer
still makes it ``untrusted`` whatever the floors.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from ground.settings import Section

DAY_MS = 86_400_000


class TrustFloors(Section):
    """What this node must have seen of a peer itself before the peer is trusted: good evidence on
    so many distinct days, and so many runs of its released skills that worked or so much paid to
    it for completed purchases. A score alone is cheap to move."""

    trusted_min_days: int = Field(default=3, ge=0, le=3_650)
    """What this node must have seen of a peer itself before the peer is trusted (its content skips
    quarantine, its attestations count): good evidence on this many distinct days, and this many
    runs of its skills the person released that worked, or this much paid to it in completed
    purchases. A management key's attestation (verified) is the other road. [0, 3650], ...
    """
    trusted_min_executions: int = Field(default=3, ge=0, le=1_000_000)
    trusted_min_paid_micro_usdc: int = Field(default=1_000_000, ge=0, le=10**12)


#: No floors: for the unit tests of the scores themselves, and nothing else.
NO_FLOORS = TrustFloors(trusted_min_days=0, trusted_min_executions=0, trusted_min_paid_micro_usdc=0)


@dataclass(frozen=True, slots=True)
class Evidence:
    """Good evidence this node holds of one peer, recomputed from its own records."""

    days: frozenset[int] = frozenset()  # day numbers (ms // DAY_MS) with a good run or a completed purchase
    executions_ok: int = 0  # successful runs of its released skills
    paid_micro_usdc: int = 0  # paid to it in completed purchases

    def merged(self, other: Evidence) -> Evidence:
        return Evidence(
            self.days | other.days,
            self.executions_ok + other.executions_ok,
            self.paid_micro_usdc + other.paid_micro_usdc,
        )

    def meets(self, floors: TrustFloors) -> bool:
        return len(self.days) >= floors.trusted_min_days and (
            self.executions_ok >= floors.trusted_min_executions
            or self.paid_micro_usdc >= floors.trusted_min_paid_micro_usdc
        )
