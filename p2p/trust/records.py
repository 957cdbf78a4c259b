"""The trust book and the weather sequences in the node's database: loaded at start, written
back as they change, and imported once from the JSON files earlier releases kept.

A save writes only what changed since the last one (the book holds up to 10,000 peers and
256 x 256 ratings; rewriting all of it every trust round would hold the one writer for long).
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import astuple, fields
from pathlib import Path

from memory.storage.store import MemoryStore
from p2p.errors import InvalidValue
from p2p.trust.book import Outcomes, TrustBook
from p2p.trust.limits import TrustLimits

_OUTCOME_FIELDS = [f.name for f in fields(Outcomes)]
_OWN_WEATHER_SEQ = "own_weather_seq"
_WEATHER_SEQS = "weather_seq"


class TrustRecords:
    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._written_outcomes: dict[bytes, tuple[int, ...]] = {}
        self._written_ratings: dict[bytes, dict[bytes, int]] = {}

    async def load(self, me: bytes, management: frozenset[bytes], limits: TrustLimits) -> TrustBook:
        """The saved book, trimmed to ``limits`` (oldest news and least-heard attesters go first)."""
        book = TrustBook(me, management, limits)
        columns = ", ".join(_OUTCOME_FIELDS)
        async with self._store.reader().execute(
            f"SELECT peer, {columns} FROM trust_outcomes ORDER BY seq"  # noqa: S608
        ) as cursor:
            outcomes = {bytes.fromhex(str(r[0])): Outcomes(*(int(v) for v in r[1:])) for r in await cursor.fetchall()}
        async with self._store.reader().execute(
            "SELECT attester, peer, milli FROM trust_ratings ORDER BY attester_seq, milli DESC, peer"
        ) as cursor:
            attestations: dict[bytes, dict[bytes, int]] = {}
            for attester, peer, milli in await cursor.fetchall():
                attestations.setdefault(bytes.fromhex(str(attester)), {})[bytes.fromhex(str(peer))] = int(milli)
        book.outcomes = dict(list(outcomes.items())[-limits.max_tracked_peers :])
        for attester, ratings in list(attestations.items())[-limits.max_attesters :]:
            book.attestations[attester] = dict(list(ratings.items())[: limits.max_ratings_per_attester])
        self._written_outcomes = {k: astuple(o) for k, o in outcomes.items()}
        self._written_ratings = {a: dict(r) for a, r in attestations.items()}
        return book

    async def save(self, book: TrustBook) -> None:
        """Write what changed in ``book`` since the last load or save, in one transaction."""
        outcomes = {k: astuple(o) for k, o in book.outcomes.items()}
        gone_peers = [k.hex() for k in self._written_outcomes.keys() - outcomes.keys()]
        order = {k: i for i, k in enumerate(outcomes)}
        changed = [
            (k.hex(), order[k], *values) for k, values in outcomes.items() if self._written_outcomes.get(k) != values
        ]
        ratings = {a: dict(r) for a, r in book.attestations.items()}
        gone_attesters = [a.hex() for a in self._written_ratings.keys() - ratings.keys()]
        attester_order = {a: i for i, a in enumerate(ratings)}
        rewritten = [a for a, r in ratings.items() if self._written_ratings.get(a) != r]
        if not (gone_peers or changed or gone_attesters or rewritten):
            return
        columns = ", ".join(_OUTCOME_FIELDS)
        marks = ", ".join("?" * (len(_OUTCOME_FIELDS) + 2))
        async with self._store.transaction() as db:
            await db.executemany("DELETE FROM trust_outcomes WHERE peer = ?", [(k,) for k in gone_peers])
            await db.executemany(
                f"INSERT OR REPLACE INTO trust_outcomes (peer, seq, {columns}) VALUES ({marks})",  # noqa: S608
                changed,
            )
            await db.executemany(
                "DELETE FROM trust_ratings WHERE attester = ?",
                [(a,) for a in (*gone_attesters, *(r.hex() for r in rewritten))],
            )
            await db.executemany(
                "INSERT INTO trust_ratings (attester, peer, milli, attester_seq) VALUES (?, ?, ?, ?)",
                [(a.hex(), p.hex(), m, attester_order[a]) for a in rewritten for p, m in ratings[a].items()],
            )
        self._written_outcomes = outcomes
        self._written_ratings = ratings

    async def weather_sequences(self) -> tuple[int, dict[bytes, int]]:
        """(this node's own last weather sequence, the last applied per management key)."""
        values = await self._state()
        seqs = json.loads(values.get(_WEATHER_SEQS, "{}"))
        return int(values.get(_OWN_WEATHER_SEQ, "0")), {bytes.fromhex(k): int(v) for k, v in seqs.items()}

    async def save_weather_sequences(self, own: int, applied: dict[bytes, int]) -> None:
        doc = json.dumps({k.hex(): v for k, v in applied.items()}, sort_keys=True)
        async with self._store.transaction() as db:
            await db.executemany(
                "INSERT INTO p2p_state (key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [(_OWN_WEATHER_SEQ, str(own)), (_WEATHER_SEQS, doc)],
            )

    async def _state(self) -> dict[str, str]:
        async with self._store.reader().execute("SELECT key, value FROM p2p_state") as cursor:
            return {str(k): str(v) for k, v in await cursor.fetchall()}

    async def import_trust_file(self, trust_file: Path, me: bytes, limits: TrustLimits) -> bool:
        """Import the trust book an earlier release kept as JSON, once: the file is then renamed
        ``<name>.imported`` (kept, not deleted). A damaged file raises ``ValueError``, untouched."""
        book = await asyncio.to_thread(_read_trust_file, trust_file, me, limits)
        if book is None:
            return False
        await self.save(book)
        await asyncio.to_thread(os.replace, trust_file, trust_file.with_name(trust_file.name + ".imported"))
        return True

    async def import_state_file(self, state_file: Path) -> bool:
        """Import the weather sequences an earlier release kept as JSON, once (renamed ``.imported``)."""
        state = await asyncio.to_thread(_read_state_file, state_file)
        if state is None:
            return False
        await self.save_weather_sequences(*state)
        await asyncio.to_thread(os.replace, state_file, state_file.with_name(state_file.name + ".imported"))
        return True


def _read_trust_file(path: Path, me: bytes, limits: TrustLimits) -> TrustBook | None:
    return TrustBook.load(path, me, frozenset(), limits) if path.exists() else None


def _read_state_file(path: Path) -> tuple[int, dict[bytes, int]] | None:
    try:
        doc = json.loads(path.read_text())
        own = int(doc.get("own_weather_seq", 0))
        applied = {bytes.fromhex(k): int(v) for k, v in doc.get("weather_seq", {}).items()}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise InvalidValue(f"{path}: unreadable network state ({exc})") from exc
    return own, applied
