"""The node's live hormonal state: kept in memory, persisted in the store's meta table.

The arithmetic is in ``memory.dynamics.hormones``; this class holds the current state,
saves it after every change (so it survives a restart) and is what the store
asks when it stamps a new crystal and what search asks for its modulation.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from memory.dynamics.hormones import (
    Event,
    HormonalState,
    HormoneSettings,
    NetworkOverride,
    decayed,
    detect_events,
    effective,
    halts_untrusted_ingestion,
    influence_at_ingest,
    spiked,
    valence,
    with_override,
)
from memory.model import Hormones, NewCrystal, Origin
from memory.storage.store import MemoryStore

META_KEY = "hormonal_state"
#: Text from these origins is what a person or the agent just said: its events move the state.
_FELT_ORIGINS = frozenset({Origin.SESSION, Origin.USER_INPUT})

_log = logging.getLogger("memory.endocrine")


class Endocrine:
    """Create with ``await Endocrine.attach(store)``: loads the saved state and hooks into the store."""

    def __init__(self, store: MemoryStore, settings: HormoneSettings, state: HormonalState) -> None:
        self._store = store
        self.settings = settings
        self._state = state

    @classmethod
    async def attach(cls, store: MemoryStore, settings: HormoneSettings | None = None) -> Endocrine:
        settings = settings or HormoneSettings()
        saved = await store.get_meta(META_KEY)
        state = HormonalState.at_rest(store.now_ms(), settings)
        if saved is not None:
            try:
                state = HormonalState.from_json(saved)
            except ValueError as exc:
                # A damaged state must not keep the node from starting; rest is a safe default.
                _log.warning("hormones.state_unreadable", extra={"fields": {"error": str(exc)}})
        endocrine = cls(store, settings, state)
        store.hormone_source = endocrine
        return endocrine

    def state(self) -> HormonalState:
        """Local levels decayed to now, and the override if it still lasts."""
        return decayed(self._state, self._store.now_ms(), self.settings)

    def levels(self) -> Hormones:
        """The effective levels that modulate memory now."""
        return effective(self._state, self._store.now_ms(), self.settings)

    def halts_untrusted_ingestion(self) -> bool:
        return halts_untrusted_ingestion(self._state, self._store.now_ms())

    async def observe(self, events: list[Event]) -> HormonalState:
        """Apply events' spikes and save."""
        if events:
            self._state = spiked(self._state, events, self._store.now_ms(), self.settings)
            await self._save()
        return self.state()

    async def observe_text(self, text: str) -> list[Event]:
        events = detect_events(text)
        await self.observe(events)
        return events

    async def apply_override(self, override: NetworkOverride) -> None:
        """A network cortisol override (a verified weather event); it replaces any earlier one."""
        self._state = with_override(self.state(), override)
        await self._save()

    async def clear_override(self) -> None:
        self._state = with_override(self.state(), None)
        await self._save()

    # --- the store's hooks ------------------------------------------------------------------

    def stamp(self, new: NewCrystal) -> NewCrystal:
        """The crystal with the current hormonal influence, unless the caller set one explicitly."""
        if new.hormones != Hormones():
            return new
        snapshot = influence_at_ingest(self.levels(), new.origin)
        mood = new.emotional_valence if new.emotional_valence != 0.0 else max(-1.0, min(1.0, valence(snapshot)))
        return replace(new, hormones=snapshot, emotional_valence=mood)

    def influences(self, items: Sequence[NewCrystal]) -> list[tuple[Hormones, float]]:
        """The (hormonal influence, emotional valence) ``stamp`` would give each of a bulk import's
        items, from one snapshot per origin; the store writes them beside the items (no copies)."""
        levels = self.levels()
        snapshots = {origin: influence_at_ingest(levels, origin) for origin in {n.origin for n in items}}
        moods = {origin: max(-1.0, min(1.0, valence(h))) for origin, h in snapshots.items()}
        return [
            (n.hormones, n.emotional_valence)
            if n.hormones != Hormones()
            else (snapshots[n.origin], n.emotional_valence if n.emotional_valence != 0.0 else moods[n.origin])
            for n in items
        ]

    async def on_ingest(self, new: NewCrystal) -> NewCrystal:
        """Let a felt text move the state, then stamp the crystal with the state it moved to."""
        if new.origin in _FELT_ORIGINS:
            await self.observe_text(new.text)
        return self.stamp(new)

    async def _save(self) -> None:
        self._state = self.state()
        await self._store.set_meta(META_KEY, self._state.to_json())
