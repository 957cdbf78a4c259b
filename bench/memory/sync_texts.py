"""Memories for the sync benchmark: the LoCoMo development conversations' turns (written apart
from this code), as "speaker: words", made distinct where a count needs more than the set holds."""

from __future__ import annotations

import json
import os
from pathlib import Path

LOCOMO = Path(
    os.environ.get("LOCOMO_PATH", Path(__file__).resolve().parents[3] / "shared/data/locomo-dev/locomo-dev.json")
)


def turns(count: int) -> list[str]:
    conversations = json.loads(LOCOMO.read_text())
    said = [
        f"{turn['speaker']}: {turn['text']}"
        for conversation in conversations
        for key, session in conversation["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
        if turn.get("text")
    ]
    out: list[str] = []
    rounds = 0
    while len(out) < count:
        out += [t if rounds == 0 else f"{t} (again, {rounds})" for t in said[: count - len(out)]]
        rounds += 1
    return out
