"""Envelope receive path vs raw PyNaCl verify of the same signed bytes.

Goal (issue 2): the full receive path (size check, decode, type checks, time
window, signature, replay guard) reaches at least 80% of raw verify throughput.
"""

from __future__ import annotations

import os
from typing import Any

import nacl.signing

from bench.timing import rate_per_s
from crypto.envelope import EnvelopePolicy, decode_envelope, open_envelope, pack_body, seal_envelope
from crypto.identity import Identity
from crypto.windows import ReplayGuard

NOW_MS = 1_700_000_000_000
GOAL_RATIO = 0.80


def _listing_body(i: int) -> bytes:
    # Shaped like a skill listing: a few short strings, tags, integers, a hash.
    return pack_body(
        {
            "stable_skill_id": f"skill-{i:06d}",
            "version": 3,
            "title": "Summarise a long email thread into action items",
            "description": "Reads the thread, extracts owners and deadlines, returns a checklist. " * 3,
            "tags": ["email", "summarisation", "productivity"],
            "content_hash": os.urandom(32),
            "price_micro_usdc": 10_000,
        }
    )


def run(quick: bool) -> dict[str, Any]:
    count = 2_000 if quick else 20_000
    rounds = 3 if quick else 5
    authors = [Identity.generate() for _ in range(16)]
    envelopes = [
        seal_envelope(authors[i % len(authors)], "skill.listing", _listing_body(i), now_ms=NOW_MS) for i in range(count)
    ]
    wire = [e.encode() for e in envelopes]
    signed = [(nacl.signing.VerifyKey(e.author), e.signing_bytes(), e.sig) for e in envelopes]
    policy = EnvelopePolicy(kinds=frozenset({"skill.listing"}))

    def raw_verify() -> int:
        for key, message, sig in signed:
            key.verify(message, sig)
        return len(signed)

    def envelope_path() -> int:
        guard = ReplayGuard(max_entries=count * 2)  # fresh guard: every message is new
        for data in wire:
            open_envelope(data, policy, now_ms=NOW_MS, replay=guard)
        return len(wire)

    def decode_only() -> int:
        for data in wire:
            decode_envelope(data, kinds=policy.kinds)
        return len(wire)

    # Interleave so that both sides see the same machine conditions.
    raw_rates, env_rates = [], []
    for _ in range(rounds):
        raw_rates.append(rate_per_s(raw_verify, rounds=1))
        env_rates.append(rate_per_s(envelope_path, rounds=1))
    raw, env = max(raw_rates), max(env_rates)
    ratio = env / raw
    return {
        "messages": count,
        "envelope_bytes_avg": sum(map(len, wire)) // len(wire),
        "baseline_raw_pynacl_verify_per_s": round(raw),
        "envelope_open_per_s": round(env),
        "decode_only_per_s": round(rate_per_s(decode_only, rounds=rounds)),
        "ratio_envelope_to_raw": round(ratio, 3),
        "goal_ratio": GOAL_RATIO,
        "goal_met": ratio >= GOAL_RATIO,
    }
