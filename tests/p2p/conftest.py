from __future__ import annotations

import time
from typing import Any

from crypto.envelope import Envelope, pack_body, seal_envelope
from crypto.identity import Identity
from marketplace.gossip.listing import KIND_SKILL_LISTING, LISTING, SkillListing
from memory.model import content_hash
from p2p.weather import KIND_WEATHER, WEATHER, Weather

NOW = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def listing(text: str = "To rotate logs: run logrotate -f /etc/logrotate.conf", **changes: Any) -> SkillListing:
    fields: dict[str, Any] = {
        "stable_skill_id": "ops.rotate-logs",
        "version": 1,
        "content_hash": content_hash(text),
        "title": "Rotate logs",
        "description": "Force a log rotation",
        "tags": ("ops", "logs"),
        "category": "ops",
        "price_micro_usdc": 10_000,
        "seller_address": "",
        "executions": 3,
        "successes": 3,
        "content": text,
    }
    fields.update(changes)
    return SkillListing(**fields)


def skill_envelope(author: Identity, now_ms: int, item: SkillListing | None = None) -> Envelope:
    body = pack_body(LISTING.body(item or listing()))
    return seal_envelope(author, KIND_SKILL_LISTING, body, now_ms=now_ms)


def weather_envelope(
    author: Identity, now_ms: int, *, seq: int = 1, level_milli: int = 900, duration_s: int = 300
) -> Envelope:
    body = pack_body(WEATHER.body(Weather(level_milli, duration_s, "test storm", now_ms, seq)))
    return seal_envelope(author, KIND_WEATHER, body, now_ms=now_ms)
