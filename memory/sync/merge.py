"""The merge rules (docs/design/devices.md): any set of operations folds into one state, the same
on every device whatever order the operations came in, twice or once.

1. An erasure by the person beats everything about its crystal: the crystal leaves the state, and
   nothing said of it before or after comes back.
2. The authority table decides what each operation may do (``ground.authority``): an operation
   whose speaker may not make its change, or that touches the person's words without the person,
   is not counted.
3. Of the operations that set one thing (the words, the type, the scope, pinned, forgotten,
   superseded, the review decision), the person's beats everyone else's whatever its clock;
   otherwise the later stamp wins.
4. No word is lost: every earlier text of a crystal stays in its history.
5. A forget is undone only by the person's restore (rule 2: only the person may restore).

Operations about a crystal whose STORE has not arrived wait: they count once it does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from ground.authority import Capability, Speaker, may, may_hide
from memory.sync.operations import NEEDS, TOUCHES_WORDS, Change, Operation


@dataclass(frozen=True, slots=True)
class CrystalState:
    id: str
    speaker: Speaker  # who said the current words
    text: str
    semantic_type: str
    scope: str
    pinned: bool
    forgotten: bool
    superseded_by: str | None
    review: str  # "held", "released", "rejected", or "" when never held
    history: tuple[str, ...]  # earlier words, oldest first


@dataclass(frozen=True, slots=True)
class MemoryState:
    crystals: Mapping[str, CrystalState]
    erased: frozenset[str]
    notes: Mapping[str, str]

    def digest(self) -> str:
        """A hash of the whole state: two devices hold the same memory exactly when these are equal."""
        doc = {
            "crystals": [asdict(self.crystals[i]) for i in sorted(self.crystals)],
            "erased": sorted(self.erased),
            "notes": sorted(self.notes.items()),
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _rank(op: Operation) -> tuple[bool, object]:
    """Rule 3: the person's word first, then the later stamp."""
    return (op.speaker is Speaker.PERSON, op.stamp)


def _latest(ops: Iterable[Operation]) -> Operation | None:
    return max(ops, key=_rank, default=None)


def _counts(op: Operation, stores: Mapping[str, Operation]) -> bool:
    """Rule 2, asked of the authority table with what the STOREs say of whose words are touched."""
    if not may(op.speaker, NEEDS[op.change]):
        return False
    if op.change in (Change.NOTE, Change.DROP_NOTE, Change.ERASE):
        return True  # an erasure counts before its crystal arrives: the crystal never appears
    store = stores.get(op.target)
    if store is None:
        return False  # waits for its crystal
    if op.change in TOUCHES_WORDS and store.speaker is Speaker.PERSON and op.speaker is not Speaker.PERSON:
        return may(op.speaker, Capability.OVERRIDE_PERSON)
    if op.change is Change.SUPERSEDE:
        replacing = stores.get(op.other)
        # by hand, the one who supersedes answers for it (``memory supersede``: anyone's words but the
        # person's, for the agent); by the node on saving, the replacing words do (``may_supersede``)
        if replacing is None:
            return False
        return may_hide(op.speaker, store.speaker) or may_hide(replacing.speaker, store.speaker)
    return True


def _one_per_key(operations: Iterable[Operation]) -> list[Operation]:
    """One operation per (device, seq). Two different ones under one key are a device's fault (the
    log refuses the second); the fold still picks the same one everywhere."""
    chosen: dict[tuple[str, int], Operation] = {}
    for op in operations:
        held = chosen.get(op.key)
        if held is None or (held != op and repr(op) < repr(held)):
            chosen[op.key] = op
    return list(chosen.values())


def fold(operations: Iterable[Operation]) -> MemoryState:
    """The state a set of operations gives (duplicates count once)."""
    unique = _one_per_key(operations)
    stores: dict[str, Operation] = {}
    for op in unique:
        # A crystal's first STORE is the one that counts: a device never stores an id twice, and
        # the least stamp makes the choice the same everywhere.
        if op.change is Change.STORE and (op.target not in stores or op.stamp < stores[op.target].stamp):
            stores[op.target] = op
    said = [op for op in unique if op.change not in (Change.STORE, Change.VECTOR)]
    counted = [op for op in said if _counts(op, stores)]
    erased = frozenset(op.target for op in counted if op.change is Change.ERASE)
    by_target: dict[str, list[Operation]] = {}
    for op in counted:
        by_target.setdefault(op.target, []).append(op)
    crystals = {
        crystal_id: _crystal(store, by_target.get(crystal_id, []), erased)
        for crystal_id, store in stores.items()
        if crystal_id not in erased
    }
    notes: dict[str, str] = {}
    for note_id, ops in by_target.items():
        added = [op for op in ops if op.change is Change.NOTE]
        if added and not any(op.change is Change.DROP_NOTE for op in ops):
            notes[note_id] = max(added, key=_rank).text
    return MemoryState(crystals, erased, notes)


def _crystal(store: Operation, ops: list[Operation], erased: frozenset[str]) -> CrystalState:
    def latest(*changes: Change) -> Operation | None:
        return _latest(op for op in ops if op.change in changes)

    words = [store, *(op for op in ops if op.change is Change.EDIT)]
    current = max(words, key=_rank)
    history = tuple(op.text for op in sorted(words, key=lambda op: op.stamp) if op is not current)
    retype = latest(Change.RETYPE)
    scope = latest(Change.SCOPE)
    pin = latest(Change.PIN, Change.UNPIN)
    forget = latest(Change.FORGET, Change.RESTORE)
    supersede = latest(Change.SUPERSEDE, Change.UNSUPERSEDE)
    review = latest(Change.RELEASE, Change.REJECT)
    replaced_by = supersede.other if supersede is not None and supersede.change is Change.SUPERSEDE else None
    return CrystalState(
        id=store.target,
        speaker=current.speaker,
        text=current.text,
        semantic_type=retype.semantic_type if retype else store.semantic_type,
        scope=scope.scope if scope else store.scope,
        pinned=pin is not None and pin.change is Change.PIN,
        forgotten=forget is not None and forget.change is Change.FORGET,
        superseded_by=None if replaced_by in erased else replaced_by,
        review=_review(review, held=store.held),
        history=history,
    )


def _review(decision: Operation | None, *, held: bool) -> str:
    if decision is not None:
        return "released" if decision.change is Change.RELEASE else "rejected"
    return "held" if held else ""
