"""The requests of the memory services (pydantic): what the HTTP API, the CLI and the MCP server
accept. A bad field is refused with a message naming it, before the store is touched.

Kept apart from the services (``memory.service``) so that describing a request (the API's route
table, the CLI's client) does not load the store.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from memory.capture.formats import ConversationFormat
from memory.dynamics.hormones import Event
from memory.entities.recognise import Kind as EntityKind
from memory.model import AssociationType, Feedback, HeldStatus, Origin, Scope, SemanticType
from memory.retrieval.query import SearchMode, SortKey


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=False)


class Detail(StrEnum):
    """How much of each crystal a search or a list answers with."""

    COMPACT = "compact"  # what an agent or a script needs: about a dozen fields
    FULL = "full"  # every field of the crystal (about 50), under "crystal"


class Filters(_Request):
    """What search and list both filter by, declared once (``memory.service.recall`` maps them onto
    ``SearchRequest`` in one place)."""

    since: str | None = Field(
        default=None,
        description="Only crystals since: 30m, 24h, 7d, 2w, an ISO date, or yesterday, last week, in March.",
    )
    until: str | None = Field(
        default=None,
        description="Only crystals until then (30m, 7d ago, an ISO date, or yesterday, last week), as they stood: "
        "what was current then.",
    )
    types: list[SemanticType] = Field(default_factory=list, description="Only these semantic types.")
    origins: list[Origin] = Field(default_factory=list, description="Only these origins.")
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(
        default_factory=list, max_length=16, description="Only crystals with every one of these tags."
    )
    source: str | None = Field(
        default=None, max_length=500, description="Only crystals from this source exactly (a file, a session)."
    )
    include_archived: bool = False
    include_superseded: bool = Field(
        default=False,
        description="Also crystals a newer one superseded (in a search, each after the one that replaced it).",
    )
    detail: Detail = Field(
        default=Detail.COMPACT,
        description="compact: each crystal's id, text, type, importance, origin, source, when it was said "
        "(said_at), sensitivity, and what it replaces or what replaced it; full: every field, under `crystal`.",
    )


class SearchArgs(Filters):
    """A memory search: every mode and filter of `bitterbot-node memory search`."""

    query: str | None = Field(
        default=None, max_length=10_000, description="Words to search for (hybrid, keyword, vector)."
    )
    mode: SearchMode = Field(
        default=SearchMode.HYBRID, description="hybrid, keyword, vector, recent, important, typed."
    )
    limit: int = Field(default=10, ge=1, le=1000)
    sort: SortKey = Field(default=SortKey.RECENCY, description="Order for mode 'typed'.")
    include_held: bool = Field(
        default=False, description="Also peer content held in quarantine (each hit is marked: quarantined, origin)."
    )
    explain: bool = Field(default=False, description="Add keyword, vector, fused and final scores to each hit.")


class ListArgs(Filters):
    """Every crystal, newest first, a page at a time, by the same filters as search."""

    limit: int = Field(default=20, ge=1, le=1000)
    offset: int = Field(default=0, ge=0, le=10_000_000, description="Skip this many (the next page).")


class RememberArgs(_Request):
    """A new memory. The same text is stored once (the existing crystal is returned)."""

    text: str = Field(min_length=1, max_length=100_000)
    type: SemanticType | None = Field(
        default=None, description="Its semantic type; left out, the node types it (see type_confidence)."
    )
    origin: Origin = Origin.USER_INPUT
    importance: float | None = Field(
        default=None, ge=0, le=1, description="How much it matters, in [0, 1]: a floor consolidation keeps."
    )
    scope: Scope = Scope.PRIVATE
    ttl: str | None = Field(default=None, description="Forget after this long: 30m, 24h, 7d, 2w.")
    pin: bool = Field(default=False, description="Keep it: it never decays or expires (permanent lifespan).")
    tags: list[str] = Field(default_factory=list, max_length=16, description="A skill's tags (with type skill).")
    category: str | None = Field(default=None, max_length=60, description="A skill's category, e.g. debugging.")


class ChatMessage(BaseModel):
    """One message of a conversation, in OpenAI chat form (other fields are ignored)."""

    model_config = ConfigDict(extra="ignore")

    role: str = Field(min_length=1, max_length=32, description="user, assistant, system or tool.")
    content: str | list[dict[str, Any]] = Field(description="The text, or a list of {type: text, text} parts.")
    name: str | None = Field(default=None, max_length=64, description="Who spoke, where the role is not enough.")
    id: str | None = Field(default=None, max_length=128, description="The message's own id, if it has one.")
    timestamp: str | int | float | None = Field(default=None, description="When: ISO time, or epoch s or ms.")


class CaptureArgs(_Request):
    """A conversation to capture: what is worth keeping is stored, typed, with where it came from."""

    messages: list[ChatMessage] = Field(
        default_factory=list, max_length=10_000, description="The conversation, as chat messages, in order."
    )
    conversation: str | None = Field(
        default=None,
        max_length=1_000_000,
        description="Or the conversation as a file holds it (OpenAI chat JSON, a Claude Code session, "
        "a ChatGPT conversations.json, or JSONL messages).",
    )
    format: ConversationFormat | None = Field(
        default=None,
        description="The file's format: openai, claude-code, chatgpt, jsonl (found from its shape when left out).",
    )
    session: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="The conversation's id, where its format has none (left out: derived from its first message).",
    )


class LinkArgs(_Request):
    """A typed link from one crystal to another, made by hand."""

    id: str = Field(min_length=1, max_length=64, description="The crystal the link starts from.")
    to: str = Field(min_length=1, max_length=64, description="The crystal it points to.")
    type: AssociationType = Field(
        description="contradicts, caused_by, result_of, part_of, related_to, updates, references."
    )
    weight: float = Field(default=1.0, gt=0, le=1)


class SupersedeArgs(_Request):
    """Say by hand that a newer crystal replaces an older one (the node finds most on its own)."""

    id: str = Field(min_length=1, max_length=64, description="The outdated crystal.")
    by: str = Field(min_length=1, max_length=64, description="The crystal that replaces it.")


class EditArgs(_Request):
    """A crystal's text, corrected: the new text replaces it, and the old one is kept in its history."""

    id: str = Field(min_length=1, max_length=64, description="The crystal to edit.")
    text: str = Field(min_length=1, max_length=100_000, description="Its new text.")


class SkillEditArgs(_Request):
    """Tags and category of a local skill, a new version of its text, or freezing it."""

    id: str = Field(min_length=1, max_length=64)
    tags: list[str] | None = Field(default=None, max_length=16, description="Its tags (replacing the old ones).")
    category: str | None = Field(default=None, max_length=60)
    text: str | None = Field(default=None, min_length=1, max_length=100_000, description="A new version's text.")
    freeze: bool = Field(default=False, description="Make it immutable (after any other change asked here).")


class RetypeArgs(_Request):
    """A person's correction of a crystal's type; kept as an example the typer learns from."""

    id: str = Field(min_length=1, max_length=64)
    type: SemanticType = Field(description="The type it really is.")


class FeedbackArgs(_Request):
    """What a crystal turned out to be worth: it steers its ranking and how long it is kept."""

    id: str = Field(min_length=1, max_length=64)
    feedback: Feedback = Field(description="useful, wrong or outdated.")


class ForgetArgs(_Request):
    id: str = Field(min_length=1, max_length=64)
    reason: str = Field(default="forgotten by the agent", max_length=500)
    erase: bool = Field(
        default=False,
        description="Erase the text now from the database, its WAL and its keyword index (cannot be undone; "
        "the person's only). Without it the crystal expires and is purged after 30 days.",
    )


class ShowArgs(_Request):
    id: str = Field(min_length=1, max_length=64)


class EntitiesArgs(_Request):
    kind: EntityKind | None = Field(default=None, description="Only entities of this kind.")
    limit: int = Field(default=50, ge=1, le=1000)


class EntityArgs(_Request):
    name: str = Field(min_length=1, max_length=200, description="A name, an alias, or a relation: Caroline's sister.")
    limit: int = Field(default=20, ge=1, le=200, description="At most this many memories that name it, newest first.")


class GapsArgs(_Request):
    closed: bool = Field(default=False, description="The gaps already filled, latest first, instead of the open ones.")
    limit: int = Field(default=50, ge=1, le=1000)


class CountArgs(_Request):
    type: SemanticType | None = Field(default=None, description="Count only crystals of this semantic type.")


class QuarantineArgs(_Request):
    """Peer content held back from the agent, or what the person decided about it."""

    status: HeldStatus = Field(default=HeldStatus.HELD, description="held (default), approved or rejected.")
    limit: int = Field(default=100, ge=1, le=10_000)


class NoteArgs(_Request):
    text: str = Field(min_length=1, max_length=10_000)
    importance: float | None = Field(
        default=None, ge=0, le=1, description="0.7 when left out; when given, a floor its crystal keeps."
    )


class EventArgs(_Request):
    events: list[Event] = Field(min_length=1, max_length=16, description="reward, error, social, achievement, urgency")


class ConsolidateArgs(_Request):
    dry_run: bool = Field(default=False, description="Report what a cycle would change; change nothing.")


class BootstrapArgs(_Request):
    context_window: int = Field(
        default=128_000, ge=1, le=10_000_000, description="The model's context window in tokens."
    )
