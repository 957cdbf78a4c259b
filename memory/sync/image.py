"""What sync knows of one crystal (its ``Image``), and the operations that take one image to the next.

The journal (``memory.sync.journal``) reads a crystal's row as an image and compares it with the
image sync last took: whatever wrote the row (a command, capture, the dream, an import), the
difference is what the device says happened. Each difference becomes the operation the merge rules
know (``memory.sync.operations``), said by the speaker the row or its audit trail names. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from ground.authority import Speaker
from memory.sync.operations import Change


@dataclass(frozen=True, slots=True)
class Image:
    speaker: str  # who said the words (ground.authority.Speaker's value)
    text: str
    semantic_type: str
    scope: str
    pinned: bool
    forgotten: bool
    superseded_by: str  # "" when current
    review: str  # "held", "released", "rejected", or ""
    #: the embedder whose vector of these words sync has said or taken ("" for none)
    vector_model: str = ""

    def dumps(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))


def loads(text: str) -> Image:
    return Image(**json.loads(text))


@dataclass(frozen=True, slots=True)
class Draft:
    """An operation before the journal numbers and stamps it."""

    change: Change
    speaker: Speaker
    text: str = ""
    semantic_type: str = ""
    scope: str = ""
    held: bool = False
    other: str = ""


def drafts(
    before: Image | None,
    after: Image | None,
    *,
    actor: Speaker,
    erased: bool,
    by: Mapping[Change, Speaker] | None = None,
) -> list[Draft]:
    """The operations that take ``before`` (None: sync never saw the crystal) to ``after`` (None: the
    row is gone). ``by``: who made the latest change of each kind the store keeps a record of (a
    scope change, a forget, ...); ``actor``: who made the latest change to the crystal, for the rest.
    The words' own changes are said by the words' speaker. A row gone without an erasure (purged
    after it expired here) says nothing: each device expires its own."""
    who = dict(by or {})

    def said_by(change: Change) -> Speaker:
        return who.get(change, actor)

    if after is None:
        return [Draft(Change.ERASE, actor)] if erased and before is not None else []
    said = Speaker(after.speaker)
    out: list[Draft] = []
    if before is None:
        # held once, whatever the person decided since: the decision travels as its own operation,
        # and the other devices keep the review (the quarantine row) as this one does
        held = "held" if after.review else ""
        out.append(Draft(Change.STORE, said, after.text, after.semantic_type, after.scope, held=bool(held)))
        # what a crystal stored before the device joined already carries, said as the changes it took
        before = Image(after.speaker, after.text, after.semantic_type, after.scope, False, False, "", held)
    if after.text != before.text or after.speaker != before.speaker:
        out.append(Draft(Change.EDIT, said, text=after.text))
    if after.semantic_type != before.semantic_type:
        out.append(Draft(Change.RETYPE, said_by(Change.RETYPE), semantic_type=after.semantic_type))
    if after.scope != before.scope:
        out.append(Draft(Change.SCOPE, said_by(Change.SCOPE), scope=after.scope))
    if after.pinned != before.pinned:
        # a pin adopts the words (memory.cognition.adopt): the pinner is who says them now
        out.append(Draft(Change.PIN, said) if after.pinned else Draft(Change.UNPIN, said_by(Change.UNPIN)))
    if after.forgotten != before.forgotten:
        change = Change.FORGET if after.forgotten else Change.RESTORE
        out.append(Draft(change, said_by(change)))
    if after.superseded_by != before.superseded_by:
        if after.superseded_by:
            out.append(Draft(Change.SUPERSEDE, said_by(Change.SUPERSEDE), other=after.superseded_by))
        else:
            out.append(Draft(Change.UNSUPERSEDE, said_by(Change.UNSUPERSEDE)))
    if after.review != before.review and after.review in ("released", "rejected"):
        change = Change.RELEASE if after.review == "released" else Change.REJECT
        out.append(Draft(change, said_by(change)))
    return out
