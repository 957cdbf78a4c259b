"""The quality gate: what may be listed on the marketplace, and why not.

A skill is listable only when it is a knowledge crystal (skill or task pattern),
neither confidential nor personal, not private (give it scope ``shared`` or
``public`` to offer it), live and not deprecated, and the local agent has recorded
at least 3 executions with at least 60 % success.
"""

from __future__ import annotations

from marketplace.executions import ExecutionStats
from memory.model import HIDDEN_LIFECYCLES, KNOWLEDGE_TYPES, Crystal, Scope, Sensitivity

MIN_EXECUTIONS = 3
MIN_SUCCESS_PERCENT = 60


def refusals(crystal: Crystal, stats: ExecutionStats) -> list[str]:
    """Every reason the crystal cannot be listed; empty when it can."""
    reasons = []
    if crystal.semantic_type not in KNOWLEDGE_TYPES:
        reasons.append(f"a {crystal.semantic_type} is a memory crystal: memories are never listed")
    if crystal.sensitivity is not Sensitivity.NORMAL:
        reasons.append(f"it is {crystal.sensitivity}: sensitive content is never listed")
    if crystal.scope is Scope.PRIVATE:
        reasons.append("it is private: give it scope shared or public to offer it")
    if crystal.lifecycle in HIDDEN_LIFECYCLES:
        reasons.append(f"it is {crystal.lifecycle}")
    if crystal.skill is not None and crystal.skill.deprecated:
        reasons.append("it is deprecated by a newer version")
    if stats.executions < MIN_EXECUTIONS:
        reasons.append(f"it needs at least {MIN_EXECUTIONS} recorded executions, has {stats.executions}")
    elif stats.successes * 100 < MIN_SUCCESS_PERCENT * stats.executions:
        reasons.append(
            f"it needs at least {MIN_SUCCESS_PERCENT}% success, has {stats.success_rate_percent}% "
            f"({stats.successes} of {stats.executions})"
        )
    return reasons
