"""Which lifecycle transitions are allowed. Every one the store makes is written to the audit log."""

from __future__ import annotations

from memory.model import Lifecycle

G, A, C, R, E, F = (
    Lifecycle.GENERATED,
    Lifecycle.ACTIVATED,
    Lifecycle.CONSOLIDATED,
    Lifecycle.ARCHIVED,
    Lifecycle.EXPIRED,
    Lifecycle.FROZEN,
)

ALLOWED: dict[Lifecycle, frozenset[Lifecycle]] = {
    G: frozenset({A, C, R, E, F}),
    A: frozenset({C, R, E, F}),
    C: frozenset({A, R, E, F}),
    R: frozenset({G, A, C, E}),  # unmerge restores an archived crystal to its state before
    E: frozenset({G}),  # remembered again after being forgotten
    F: frozenset({A, R, E}),  # unfrozen, or explicitly archived/forgotten
}


def can_transition(current: Lifecycle, target: Lifecycle) -> bool:
    return target in ALLOWED[current]
