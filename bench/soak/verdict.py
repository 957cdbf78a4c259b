"""What the soak checks once its daemon has stopped (pure over the rows, the reading apart): every
token written is in exactly one crystal of its kind, no damaged line's token is in any, no crystal
seen during the run is missing, and SQLite finds the file sound."""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.soak.tokens import tokens_in


class SoakInvariantBroken(AssertionError):
    """A message lost or stored twice, a damaged line's words stored, a crystal gone, or a file SQLite
    finds unsound: the soak found a bug."""


@dataclass(frozen=True, slots=True)
class Rows:
    crystals: list[tuple[str, str, str | None]]  # (id, text, source), every lifecycle
    integrity: str


def read_rows(db: Path) -> Rows:
    """Every crystal row (whatever its lifecycle: superseded, archived and expired ones too) and
    ``PRAGMA integrity_check``'s answer."""
    connection = sqlite3.connect(db)
    try:
        integrity = "; ".join(str(row[0]) for row in connection.execute("PRAGMA integrity_check"))
        crystals = [(str(r[0]), str(r[1]), r[2]) for r in connection.execute("SELECT id, text, source FROM crystals")]
    finally:
        connection.close()
    return Rows(crystals, integrity)


def count_tokens(texts: Iterable[str]) -> Counter[str]:
    """In how many crystals each token appears (once per crystal, however often within it)."""
    return Counter(token for text in texts for token in set(tokens_in(text)))


def judge(rows: Rows, *, written: set[str], imported: set[str], damaged: set[str], seen: set[str]) -> dict[str, Any]:
    """The figures, and the broken invariants under ``broken`` (empty: all held)."""
    captured = count_tokens(text for _, text, source in rows.crystals if (source or "").startswith("capture:"))
    everywhere = count_tokens(text for _, text, _ in rows.crystals)
    ids = {cid for cid, _, _ in rows.crystals}
    lost = sorted(t for t in written if captured[t] == 0)
    doubled = sorted(t for t in written if captured[t] > 1)
    import_lost = sorted(t for t in imported if everywhere[t] == 0)
    import_doubled = sorted(t for t in imported if everywhere[t] > 1)
    leaked = sorted(t for t in damaged if everywhere[t])
    vanished = sorted(seen - ids)
    found = {"lost": lost, "duplicated": doubled, "import_lost": import_lost, "import_duplicated": import_doubled,
             "damaged_stored": leaked, "crystals_vanished": vanished}  # fmt: skip
    broken = {name: values[:20] for name, values in found.items() if values}
    if rows.integrity != "ok":
        broken["integrity_check"] = [rows.integrity[:500]]
    return {
        "crystals": len(rows.crystals),
        "messages_checked": len(written),
        "lost": len(lost),
        "duplicated": len(doubled),
        "imported_checked": len(imported),
        "import_lost": len(import_lost),
        "import_duplicated": len(import_doubled),
        "damaged_tokens_stored": len(leaked),
        "crystals_seen_then_vanished": len(vanished),
        "integrity_check": rows.integrity,
        "broken": broken,
    }


def _read_only(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)


def captured_texts(db: Path) -> list[str] | None:
    """The captured crystals' texts now, read beside the running daemon; None if the file is busy."""
    try:
        connection = _read_only(db)
        try:
            return [str(r[0]) for r in connection.execute("SELECT text FROM crystals WHERE source LIKE 'capture:%'")]
        finally:
            connection.close()
    except sqlite3.Error:
        return None


def crystal_ids(db: Path) -> set[str]:
    """Every crystal's id now (committed rows), read beside the running daemon; none if the file
    could not be read (the check then has fewer ids to look for, never a false alarm)."""
    try:
        connection = _read_only(db)
        try:
            return {str(r[0]) for r in connection.execute("SELECT id FROM crystals")}
        finally:
            connection.close()
    except sqlite3.Error:
        return set()
