"""A change to memory as it travels between a person's devices: one operation, made by one device,
numbered in that device's sequence, stamped by its clock, and said by a speaker the device vouches
for (``ground.authority``: the person, the agent, ...). Nothing here trusts an operation: the merge
(``memory.sync.merge``) asks the authority table about each before it counts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from ground.authority import Capability, Speaker
from memory.sync.clock import Stamp


class Change(StrEnum):
    """What an operation does. The values travel between devices: never rename one."""

    STORE = "store"  # a crystal, with its words, type, scope and whether it is held for review
    EDIT = "edit"  # new words for a crystal; the old ones stay in its history
    RETYPE = "retype"
    SUPERSEDE = "supersede"  # ``other`` replaces the target
    UNSUPERSEDE = "unsupersede"
    FORGET = "forget"
    RESTORE = "restore"  # undoes a forget: the person's alone
    PIN = "pin"
    UNPIN = "unpin"
    SCOPE = "scope"  # share or keep private
    RELEASE = "release"  # a held crystal released by the person
    REJECT = "reject"  # a held crystal rejected by the person
    ERASE = "erase"  # gone for good, on every device, with every word of it
    NOTE = "note"  # a working-memory note
    DROP_NOTE = "drop_note"
    #: a crystal's vector in one embedder's space, from the device that embedded it, so that a
    #: device that does not embed (a Pi-class box) searches by meaning too. Not part of the state:
    #: the merge passes over it; a device takes it if its words are still the ones embedded.
    VECTOR = "vector"


#: What a speaker needs to make each change (``ground.authority``'s table decides who has it). A
#: STORE needs nothing: it records who said the words (a peer's, a file's), and the words carry
#: that speaker's authority, no more.
NEEDS: dict[Change, Capability] = {
    Change.EDIT: Capability.WRITE,
    Change.RETYPE: Capability.WRITE,
    Change.SUPERSEDE: Capability.SUPERSEDE,
    Change.UNSUPERSEDE: Capability.SUPERSEDE,
    Change.FORGET: Capability.WRITE,
    Change.RESTORE: Capability.OVERRIDE_PERSON,
    Change.PIN: Capability.DIRECT,
    Change.UNPIN: Capability.DIRECT,
    Change.SCOPE: Capability.CHANGE_SCOPE,
    Change.RELEASE: Capability.DECIDE_QUARANTINE,
    Change.REJECT: Capability.DECIDE_QUARANTINE,
    Change.ERASE: Capability.ERASE,
    Change.NOTE: Capability.WRITE,
    Change.DROP_NOTE: Capability.WRITE,
}

#: Changes to a crystal's words or their standing, which only the person may make to the person's words.
#: (A SUPERSEDE is judged by whose words replace whose: ``ground.authority.may_hide``.)
TOUCHES_WORDS = frozenset({Change.EDIT, Change.RETYPE, Change.UNSUPERSEDE, Change.FORGET})


@dataclass(frozen=True, slots=True)
class Operation:
    device: str  # the device that made it (its peer id)
    seq: int  # 1, 2, 3, ... in that device's sequence, with no gap
    stamp: Stamp
    speaker: Speaker  # who said it, as the device vouches
    change: Change
    target: str  # a crystal's id, or a note's
    text: str = ""  # STORE, EDIT, NOTE
    semantic_type: str = ""  # STORE, RETYPE
    scope: str = ""  # STORE, SCOPE
    held: bool = False  # STORE: held for the person's review
    other: str = ""  # SUPERSEDE: the crystal that replaces the target
    #: the words were taken out because the target was erased (the operation still counts in its
    #: device's sequence, and still says what it did)
    emptied: bool = False
    #: STORE: the rest of the crystal (its times, source, context, tags...) as the export writes it;
    #: carried as said, never merged
    details: str = ""
    model: str = ""  # VECTOR: the embedder's id
    vector: bytes = b""  # VECTOR: float32, little-endian; its ``details`` is the embedded text's hash

    @property
    def key(self) -> tuple[str, int]:
        return (self.device, self.seq)

    def emptied_of_words(self) -> Operation:
        """This operation with its words taken out, as it is kept and sent once its target is erased."""
        if self.text or self.details or self.vector:
            return replace(self, text="", details="", vector=b"", emptied=True)
        return self
