"""A running node's trust: the book and its rows, the rounds that recompute it, and what it hands on.

Every round (``[p2p] attestation_interval_min``) folds in this node's own evidence, reruns
EigenTrust in a worker thread (bounded by ``[trust] eigentrust_budget_s``), hands the levels to the
validator, releases held content of authors who became trusted when the person set that rule,
gossips this node's signed attestation and saves the book. Between rounds it counts what peers
did: a valid message for its author, a rejected one against the peer that forwarded it, an
attestation heard (``counts``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from crypto.peer_id import ed25519_from_peer_id
from ground.clock import wall_clock_ms
from ground.events import get_logger
from memory.governance.quarantine import release_from
from memory.storage.store import MemoryStore
from p2p.kinds import Received
from p2p.settings import TrustSettings
from p2p.trust.attestation import TrustAttestation
from p2p.trust.book import STANDING_LEVELS, TrustBook, TrustLevel, compute_trust
from p2p.trust.records import TrustRecords
from p2p.validation import MessageValidator
from p2p.weather import NetworkWeather

log = get_logger("node.p2p")

#: Folds this node's own evidence of peers into the book (``marketplace.desk.reputation.fold_in_evidence``).
FoldEvidence = Callable[[TrustBook, MemoryStore], Awaitable[None]]


class TrustKeeper:
    """The trust book of a running node, kept in its database with the weather sequences
    (``p2p.trust.records``), and the levels of the last round (what the validator, ``peers`` and
    the market's bounds read: a request never costs an EigenTrust run)."""

    def __init__(
        self,
        me: bytes,
        anchors: frozenset[bytes],
        settings: TrustSettings,
        validator: MessageValidator,
        store: Callable[[], MemoryStore],
        *,
        fold_evidence: FoldEvidence,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self._me, self._anchors, self._settings = me, anchors, settings
        self._validator = validator
        self._store = store
        self._fold_evidence = fold_evidence
        self._now_ms = now_ms
        self.book = TrustBook(me, anchors, settings, floors=settings)
        self._levels: dict[bytes, TrustLevel] = {}
        self._records: TrustRecords | None = None  # the book's rows, once the store is open
        self._weather: NetworkWeather | None = None
        #: Attestations heard, and those whose attester had no standing here by the time they arrived.
        self.counts = {"attestations": 0, "attestations_not_heard": 0}

    async def open(self, trust_file: Path, state_file: Path, weather: NetworkWeather) -> None:
        """The book and the weather sequences from the database, after importing the JSON files an
        earlier release kept (a damaged one is set aside for inspection, never fatal at start); then a
        first round."""
        records = TrustRecords(self._store())
        self._records, self._weather = records, weather
        for path in (trust_file, state_file):
            try:
                if path is trust_file:
                    imported = await records.import_trust_file(path, self._me, self._settings)
                else:
                    imported = await records.import_state_file(path)
            except ValueError as exc:
                damaged = path.with_name(f"{path.name}.damaged-{self._now_ms()}")
                await asyncio.to_thread(os.replace, path, damaged)
                log.warning("p2p.state_set_aside", error=str(exc), kept_as=str(damaged))
                continue
            if imported:
                log.info("p2p.state_imported", file=str(path), kept_as=f"{path.name}.imported")
        self.book = await records.load(self._me, self._anchors, self._settings)
        self.book.floors = self._settings
        weather.restore(*await records.weather_sequences(), me=self._me)
        await self.recompute()

    async def save(self) -> None:
        """Write what changed in the book and the weather sequences (nothing before ``open``)."""
        if self._records is None or self._weather is None:
            return
        await self._records.save(self.book)
        await self._records.save_weather_sequences(self._weather.own_seq, self._weather.sequences.snapshot())

    # --- what peers did ----------------------------------------------------------------------

    def delivered(self, author: bytes) -> None:
        """A message of ``author`` passed the validator (counted for display only: keys are free)."""
        self.book.record(author, valid=1)

    def rejected(self, peer_id: str, reason: str) -> None:
        """A rejected message counts against the peer that sent it (honest peers validate first)."""
        key = ed25519_from_peer_id(peer_id)
        if key is not None:
            self.book.record(key, invalid=1)

    async def heard(self, received: Received) -> None:
        """The consumer of the attestation kind. The validator already ignores attesters without
        standing; levels may have moved since."""
        assert isinstance(received.message, TrustAttestation)
        counted = self.book.attest(received.author, received.message.ratings)
        self.counts["attestations" if counted else "attestations_not_heard"] += 1

    # --- rounds ------------------------------------------------------------------------------

    async def recompute(self) -> None:
        """Fold in this node's own evidence, then EigenTrust on a snapshot in a worker thread (its time
        is bounded by the book's limits): the event loop keeps serving while it runs."""
        await self._fold_evidence(self.book, self._store())
        computation = await asyncio.to_thread(compute_trust, self.book.snapshot())
        self.book.install(computation)
        before = self._levels
        self._levels = {peer: t.level for peer, t in computation.peers.items()}
        newly_trusted = [
            peer
            for peer, level in self._levels.items()
            if level in STANDING_LEVELS and before.get(peer) not in STANDING_LEVELS
        ]
        await self._release_held(newly_trusted)
        self._validator.trust_levels = dict(self._levels)
        self._validator.heard_attesters = computation.attesters | frozenset(
            peer for peer, level in self._levels.items() if level in (TrustLevel.TRUSTED, TrustLevel.VERIFIED)
        )
        log.info(
            "p2p.trust_computed",
            peers=len(computation.peers),
            attesters=len(computation.attesters),
            rounds=computation.rounds,
            converged=computation.converged,
        )

    async def _release_held(self, newly_trusted: list[bytes]) -> None:
        """Held content waits for the person, unless the person set this rule (issue 27)."""
        if not (self._settings.release_held_on_trust and newly_trusted):
            return
        sources = [f"peer:{peer.hex()}" for peer in newly_trusted]
        released = await release_from(self._store(), sources, actor="trust")
        if released:
            log.info("p2p.quarantine_released", crystals=released, authors=len(newly_trusted))

    async def run(
        self,
        every_s: float,
        attest: Callable[[TrustAttestation], Awaitable[Any]],
        also: Callable[[], Awaitable[Any]],
    ) -> None:
        """Every ``every_s``: a round, ``also`` (what else is due as often), this node's attestation
        sent through ``attest`` when it rates anyone, and a save."""
        while True:
            await asyncio.sleep(every_s)
            await self.recompute()
            await also()
            ratings = self.book.my_ratings()
            if ratings:
                await attest(TrustAttestation(tuple(ratings)))
            await self.save()

    # --- what others read --------------------------------------------------------------------

    def level_of_key(self, key: bytes) -> TrustLevel:
        """A peer's trust level as of the last round (management keys are verified)."""
        return self._levels.get(key) or self._validator.level_of(key)

    def level_of_peer(self, peer_id: str) -> TrustLevel:
        key = ed25519_from_peer_id(peer_id)
        return TrustLevel.PROVISIONAL if key is None else self.level_of_key(key)

    def standing_of(self, key_hex: str) -> tuple[int, float]:
        """A hex key's rank in the live book, least trusted first (for the bounds' evictions)."""
        return self.book.standing_of(key_hex)

    def report(self) -> dict[str, Any]:
        """The book's size and the last round, for ``status``."""
        book = self.book
        return {
            "tracked_peers": len(book.outcomes),
            "attesters": len(book.attestations),
            "ratings": sum(len(r) for r in book.attestations.values()),
            "last_computed_peers": len(book.last.peers),
            "last_rounds": book.last.rounds,
            "last_converged": book.last.converged,
        }
