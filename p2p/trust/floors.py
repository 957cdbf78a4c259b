"""What this node must have seen of a peer itself before the peer may be ``trusted`` (pure).

Trust decides what skips quarantine and whose attestations count, so it must cost something a
fresh key cannot fake in an afternoon. Scores alone did not: global trust is relative to the best
peer that is not an anchor, so one recorded execution, or one minimum purchase, made a fresh key
``trusted`` wherever it was the best-rated peer. On top of the score, a peer needs evidence of
this node's own, in absolute terms:

- on at least ``min_days`` distinct days (the relationship has lasted, and was not one burst);
- either ``min_executions`` successful runs of its skills that the person released (held content
  earns nothing), or ``min_paid_micro_usdc`` paid to it for purchases that completed.

Verification by a management key is another road (``book._level``), and evidence against a peer
still makes it ``untrusted`` whatever the floors.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class TrustFloors:
    min_days: int = 3
    min_executions: int = 3
    min_paid_micro_usdc: int = 1_000_000


#: No floors: for the unit tests of the scores themselves, and nothing else.
NO_FLOORS = TrustFloors(0, 0, 0)


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
        return len(self.days) >= floors.min_days and (
            self.executions_ok >= floors.min_executions or self.paid_micro_usdc >= floors.min_paid_micro_usdc
        )
