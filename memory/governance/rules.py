"""Governance: what may leave the node, and what a secret becomes when a text must.

Plain functions over plain data. A crystal's sensitivity and who may read it (``classify_sensitivity``,
``is_visible``, ``visibility_sql``) live in ``memory.sensitivity``, below the store that applies them
on every read path; they are named here too, where governance's callers have always found them.
"""

from __future__ import annotations

from memory.errors import ExportRefused
from memory.governance.secrets import find_secrets
from memory.governance.secrets.spans import replaced
from memory.model import KNOWLEDGE_TYPES, MEMORY_TYPES, CallerScope, Crystal, Scope, Sensitivity
from memory.sensitivity import classify_sensitivity, is_visible, visibility_sql

__all__ = ["SECRET_STAND_IN", "check_exportable", "classify_sensitivity", "is_visible", "redacted", "visibility_sql"]

SECRET_STAND_IN = "[a secret]"  # noqa: S105 - the placeholder for one, not a password


def redacted(text: str) -> str:
    """``text`` with every secret found (``memory.governance.secrets``) replaced by ``SECRET_STAND_IN``:
    what may leave the node when the rest of the text is needed elsewhere (a remote embedder: the topic
    stays searchable, the secret stays home)."""
    return replaced(text, find_secrets(text), SECRET_STAND_IN)


def check_exportable(crystal: Crystal, now_ms: int) -> None:
    """Raise ``ExportRefused`` unless the crystal may be sent to a peer.

    Memory crystals (episode, preference, relationship, fact, goal) never leave,
    nor does anything personal or confidential, expired or archived, or private.
    """
    if crystal.semantic_type in MEMORY_TYPES:
        raise ExportRefused(crystal.id, f"{crystal.semantic_type} crystals are private memories")
    if crystal.semantic_type not in KNOWLEDGE_TYPES:
        raise ExportRefused(crystal.id, f"only skills and task patterns can be exported, not {crystal.semantic_type}")
    if crystal.sensitivity is not Sensitivity.NORMAL:
        raise ExportRefused(crystal.id, f"its sensitivity is {crystal.sensitivity}")
    if not is_visible(crystal, CallerScope.LOCAL, now_ms):
        raise ExportRefused(crystal.id, f"it is {crystal.lifecycle}")
    if crystal.scope is Scope.PRIVATE:  # a bought skill is stored private: it is not this node's to give away
        raise ExportRefused(crystal.id, "it is private: give it scope shared or public to share it")
