"""The sync exchange's settings (a component of the ``[devices]`` table): how often devices meet,
what one answer may hold, how much a member may ask, and what travels."""

from __future__ import annotations

from pydantic import Field

from ground.settings import Section


#: The host reads a frame of at most 1 MiB (``p2p.framing.MAX_FRAME_BYTES``); an answer stays 16 KiB
#: under it, for its outer fields.
class SyncSettings(Section):
    pull_every_s: float = Field(default=30.0, ge=1.0, le=3_600.0)
    """How often this device asks each of the person's other devices for what it lacks, besides
    asking at once when it has something new or hears that another has."""
    journal_every_ms: int = Field(default=250, ge=20, le=60_000)
    """How often the journal is read for changes to this device's memory (a change reaches an
    online device within about this, plus two round trips)."""
    ops_per_answer: int = Field(default=2_000, ge=1, le=20_000)
    """The most operations one answer holds (a device that lacks more asks again at once)."""
    answer_bytes: int = Field(default=900_000, ge=70_000, le=1_032_192)
    """The most bytes one answer takes on the wire (its operations are cut to fit)."""
    asks_per_minute: int = Field(default=240, ge=1, le=100_000)
    """How many asks one member device may make of this one per minute; past it, it is refused
    until the minute has passed. A stranger's ask is refused before anything in it is read."""
    ask_timeout_s: float = Field(default=15.0, ge=1.0, le=300.0)
    """How long an ask waits for its answer."""
    carry_private: bool = True
    """Whether private crystals (the default scope) travel to the person's other devices. Pairing a
    device is the person's own act, so by default they do; false keeps them on the device that
    stored them, and only shared and public ones travel."""
    carry_confidential: bool = False
    """Whether secrets (confidential crystals: passwords, keys) travel to the person's other
    devices. By default they stay on the device that stored them."""
    embeds: bool = True
    """Whether this device runs the embedding model on its memory. False suits a Pi-class box in
    a group with a device that embeds: it takes the vectors that device made (they travel with the
    crystals), and its own new crystals are found by keywords until that device has embedded them
    and sent their vectors back. A device alone, or in a group where none embeds, keeps true."""
    share_vectors: bool = True
    """Whether the vectors this device made travel to the person's other devices (1.5 KiB a
    crystal with MiniLM), so that they need not embed the same words again."""
