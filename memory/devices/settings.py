"""``[devices]``: pairing a person's devices (``memory.devices.desk``)."""

from __future__ import annotations

from pydantic import Field

from memory.sync.settings import SyncSettings


class DevicesSettings(SyncSettings):
    """How long a pairing code lives, how many wrong proofs it survives, and how many join requests
    the inviting device reads; and how the person's devices keep one memory (``memory.sync``)."""

    pairing_code_ttl_s: int = Field(default=600, ge=1, le=86_400)
    """How long a code printed by `devices pair` can be used, in seconds (10 minutes). It is used
    once; a new `devices pair` replaces it. [1, 86400]."""
    pairing_code_attempts: int = Field(default=3, ge=1, le=20)
    """Wrong proofs of a code (a mistyped secret, or a stranger guessing) after which it is burnt:
    nobody can join with it, and the person prints a new one. [1, 20]."""
    pairing_requests_per_min: int = Field(default=30, ge=1, le=6_000)
    """Join requests read per minute from all peers together (each peer at most a third of that,
    at least one): past it a request is answered "busy" before anything is checked. [1, 6000]."""
