"""The quality gate: what may be listed on the marketplace, and why not.

A skill is listable only when it is a knowledge crystal (skill or task pattern) of
this node's own (not one another node sent or sold it), neither confidential nor
personal and holding nothing that reads as a secret, not private (``skills publish``,
the person's alone, makes it public), live and not deprecated, and the local agent
has recorded at least 3 executions with at least 60 % success (the design's gate).
"""

from __future__ import annotations

from marketplace.executions import ExecutionStats
from memory.governance.secrets import holds_secret
from memory.model import HIDDEN_LIFECYCLES, KNOWLEDGE_TYPES, Crystal, Origin, Scope, Sensitivity

MIN_EXECUTIONS = 3
MIN_SUCCESS_PERCENT = 60


def refusals(crystal: Crystal, stats: ExecutionStats, *, publishing: bool = False) -> list[str]:
    """Every reason the crystal cannot be listed; empty when it can. ``publishing``: the person is
    listing it now, which makes it public, so its being private is no reason."""
    reasons = []
    if crystal.semantic_type not in KNOWLEDGE_TYPES:
        reasons.append(f"a {crystal.semantic_type} is a memory crystal: memories are never listed")
    if crystal.origin is Origin.PEER:
        reasons.append("another node sent or sold it: it is its author's to sell, not this node's")
    if crystal.sensitivity is not Sensitivity.NORMAL:
        reasons.append(f"it is {crystal.sensitivity}: sensitive content is never listed")
    elif holds_secret(crystal.text):
        reasons.append(
            "its text holds what reads as a secret (a password, key or token): write a version without it "
            f"(`bitterbot-node skills edit {crystal.id} --text ...`) and publish that"
        )
    if crystal.scope is Scope.PRIVATE and not publishing:
        reasons.append(f"it is private: `bitterbot-node skills publish {crystal.id}` (the person's) makes it public")
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
