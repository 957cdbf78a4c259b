"""Who may do what: one table from the speaker of some words to what those words may do (pure).

Authority follows who vouches for the words, never the road they came in by. Every stored word
records its ``Speaker``; every command states the ``Capability`` it needs; every ingest path
decides a speaker for what it stores. All of them ask ``may`` (or ``spending``), here, and nothing
else decides. The README's authority table is ``table()``; a test checks that every command and
every ingest road is in it.

The speakers, and what vouches for each:

- the person: the owner's token, the control socket (0600, beside that token), the dashboard
  session the person opened with either;
- the agent: the API token, the MCP server;
- the person's turns in a transcript: what a transcript's user role says. Vouched for only by
  whoever handed the transcript over (a watched folder, or the agent through ``memory capture``):
  the agent can write a "user" line, and a person pastes pages into chats. So a captured turn
  never directs the agent on its own: it is the person's word for facts, not for orders, until
  the person confirms it (``memory pin``);
- the agent's side of a transcript: its own turns, tool and command output, the prompts it wrote
  to sub-agents, and what it quoted from pages it read. A stranger's words, as far as authority
  goes: instruction-like text of theirs is held for the person (``memory.governance.quarantine``);
- a file imported from elsewhere (a folder, a Mem0/Letta/ChatGPT/Obsidian export, another node's
  export): text, with no authority;
- this node's own export, signed by its identity: it restores each word with the speaker it was
  recorded with, nothing more (``own export`` is a road, not a speaker; see ``ROADS``);
- a peer, at its trust level: held until trusted or released by the person, never an order;
- a seller: a bought skill, held for review like a peer's;
- this node: what it derived itself (dream syntheses, consolidation merges).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from ground.errors import BitterbotError


class Speaker(StrEnum):
    """Who said some stored words. The values are stored in the database: never rename one."""

    PERSON = "person"
    AGENT = "agent"
    PERSON_IN_TRANSCRIPT = "person_in_transcript"
    AGENT_IN_TRANSCRIPT = "agent_in_transcript"
    FILE = "file"
    PEER = "peer"
    SELLER = "seller"
    NODE = "node"


class Capability(StrEnum):
    """What words, or a caller, may do."""

    DIRECT = "make a directive or something permanent"
    PROMPT_UNMARKED = "reach the bootstrap or MEMORY.md unmarked"
    SUPERSEDE = "supersede others' words (not the person's)"
    OVERRIDE_PERSON = "supersede, forget, retype, unsupersede, pin or edit the person's words"
    DECIDE_QUARANTINE = "release or reject held words (quarantine)"
    FORM_SKILL = "form an emerging skill from its practice"
    CRYSTALLISE_SKILL = "crystallise an emerging skill"
    CHANGE_SCOPE = "change a crystal's scope: share or publish it"
    ERASE = "erase words for good, leaving no trace"
    SPEND_WITHIN_BUDGET = "spend up to the purchase ceiling, within the daily budget"
    SPEND_PAST_CEILING = "spend past the purchase ceiling or the daily budget"
    OPEN_DASHBOARD = "open a dashboard session"
    READ = "read memory and the node's state"
    WRITE = "store words of its own and change its own"
    RUN_NODE = "run the node's own machinery (capture, dream, consolidation, connections, its wallet)"
    ADMINISTER = "speak for the node to others (arbitrate disputes, broadcast weather)"
    MANAGE_DEVICES = "pair, join, list or remove the person's devices (the device group)"


C = Capability
#: The table. A speaker may do exactly what its row lists; what a row leaves out is refused.
CAPABILITIES: dict[Speaker, frozenset[Capability]] = {
    Speaker.PERSON: frozenset(Capability),
    Speaker.AGENT: frozenset(
        {C.PROMPT_UNMARKED, C.SUPERSEDE, C.FORM_SKILL, C.CRYSTALLISE_SKILL, C.SPEND_WITHIN_BUDGET, C.READ, C.WRITE,
         C.RUN_NODE}
    ),
    Speaker.PERSON_IN_TRANSCRIPT: frozenset({C.PROMPT_UNMARKED, C.SUPERSEDE, C.FORM_SKILL}),
    Speaker.AGENT_IN_TRANSCRIPT: frozenset(),
    Speaker.FILE: frozenset(),
    Speaker.PEER: frozenset(),
    Speaker.SELLER: frozenset(),
    Speaker.NODE: frozenset({C.PROMPT_UNMARKED, C.SUPERSEDE}),
}  # fmt: skip

#: How far each speaker's word stands when two speak of the same thing: automatic supersession
#: never lets a lower one hide a higher one's words, and the person's words are hidden only by
#: the person (``OVERRIDE_PERSON``). Higher is stronger.
STANDING: dict[Speaker, int] = {
    Speaker.PERSON: 7,
    Speaker.AGENT: 5,
    Speaker.PERSON_IN_TRANSCRIPT: 5,
    Speaker.NODE: 4,
    Speaker.AGENT_IN_TRANSCRIPT: 2,
    Speaker.FILE: 2,
    Speaker.SELLER: 1,
    Speaker.PEER: 1,
}


class Road(StrEnum):
    """Every way words come into the node's memory, and who the words on it are said by."""

    OWNER_COMMAND = "a command with the owner's token, the control socket or the dashboard"
    AGENT_COMMAND = "a command with the API token or over MCP"
    CAPTURE_PERSON_TURN = "a captured transcript: the user's turns"
    CAPTURE_AGENT_TURN = "a captured transcript: assistant turns, tool output, sub-agent prompts, quotes"
    CAPTURE_EXTRACTOR_FAILED = "a captured transcript whose extractor failed"
    FILE_IMPORT = "a file or folder imported or indexed (Mem0, Letta, ChatGPT, Obsidian, Markdown)"
    FOREIGN_EXPORT = "an export file not signed by this node"
    OWN_EXPORT = "this node's own export, signed by its identity"
    PEER_GOSSIP = "a skill from a peer"
    PURCHASE = "a skill bought from a seller"
    DERIVED = "the node's own dream and consolidation"


#: The speaker a road's words get. ``None``: the speaker each word was recorded with, vouched for
#: by this node's signature (``OWN_EXPORT``).
ROADS: dict[Road, Speaker | None] = {
    Road.OWNER_COMMAND: Speaker.PERSON,
    Road.AGENT_COMMAND: Speaker.AGENT,
    Road.CAPTURE_PERSON_TURN: Speaker.PERSON_IN_TRANSCRIPT,
    Road.CAPTURE_AGENT_TURN: Speaker.AGENT_IN_TRANSCRIPT,
    Road.CAPTURE_EXTRACTOR_FAILED: Speaker.AGENT_IN_TRANSCRIPT,
    Road.FILE_IMPORT: Speaker.FILE,
    Road.FOREIGN_EXPORT: Speaker.FILE,
    Road.OWN_EXPORT: None,
    Road.PEER_GOSSIP: Speaker.PEER,
    Road.PURCHASE: Speaker.SELLER,
    Road.DERIVED: Speaker.NODE,
}


class NotAllowed(BitterbotError):
    """A speaker asked for what the authority table does not give it (403 to a caller)."""

    def __init__(self, speaker: Speaker, capability: Capability, what: str = "") -> None:
        self.speaker = speaker
        self.capability = capability
        doing = f"{what}: " if what else ""
        super().__init__(
            f"{doing}{_WHO[speaker]} may not {capability.value}; only the person decides this "
            "(`bitterbot-node` on this machine, or the dashboard), never the agent: ask the person"
        )


_WHO = {
    Speaker.PERSON: "the person",
    Speaker.AGENT: "the agent",
    Speaker.PERSON_IN_TRANSCRIPT: "a captured user turn",
    Speaker.AGENT_IN_TRANSCRIPT: "a captured assistant turn, tool output or quote",
    Speaker.FILE: "an imported file",
    Speaker.PEER: "a peer",
    Speaker.SELLER: "a seller",
    Speaker.NODE: "the node's own inference",
}


def may(speaker: Speaker, capability: Capability) -> bool:
    """Whether the table gives ``speaker`` ``capability``."""
    return capability in CAPABILITIES[speaker]


def require(speaker: Speaker, capability: Capability, what: str = "") -> None:
    """Raise ``NotAllowed`` unless the table gives ``speaker`` ``capability``."""
    if not may(speaker, capability):
        raise NotAllowed(speaker, capability, what)


def may_hide(new: Speaker, old: Speaker) -> bool:
    """Whether words of ``new`` may hide (supersede) words of ``old``: the person's only by the
    person; anyone else's by a speaker that may supersede and stands at least as high."""
    if old is Speaker.PERSON:
        return may(new, Capability.OVERRIDE_PERSON)
    return may(new, Capability.SUPERSEDE) and STANDING[new] >= STANDING[old]


def weakest(speakers: Iterable[Speaker]) -> Speaker:
    """The speaker with the least standing among ``speakers``: words of several speakers together
    (a piece of a conversation, a merge) carry no more authority than the weakest of them."""
    return min(speakers, key=lambda s: (STANDING[s], len(CAPABILITIES[s])))


def spend_allowance(speaker: Speaker, *, price: int, ceiling: int, spent_today: int, budget: int) -> str | None:
    """Why ``speaker`` may not pay ``price`` (micro-USDC) now, or ``None`` when it may: up to the
    ceiling per purchase and the daily budget with ``SPEND_WITHIN_BUDGET``, past them only with
    ``SPEND_PAST_CEILING``."""
    if may(speaker, Capability.SPEND_PAST_CEILING):
        return None
    if not may(speaker, Capability.SPEND_WITHIN_BUDGET):
        return f"{_WHO[speaker]} may not spend"
    if price > ceiling:
        return (
            f"{price / 1e6:.6f} USDC is past the purchase ceiling of {ceiling / 1e6:.6f} USDC, "
            "([marketplace] max_purchase_micro_usdc), which only the person may lift"
        )
    if spent_today + price > budget:
        return (
            f"{price / 1e6:.6f} USDC would take today's spending to {(spent_today + price) / 1e6:.6f} USDC, "
            f"past the agent's daily budget of {budget / 1e6:.6f} USDC ([marketplace] "
            "agent_daily_budget_micro_usdc); ask the person"
        )
    return None


def table() -> str:
    """The table as Markdown: a row per capability, a column per speaker."""
    head = "| | " + " | ".join(_WHO[s] for s in Speaker) + " |"
    rule = "|---|" + "---|" * len(Speaker)
    rows = [f"| {c.value} | " + " | ".join("yes" if may(s, c) else "-" for s in Speaker) + " |" for c in Capability]
    roads = ["", "| road in | its words are said by |", "|---|---|"] + [
        f"| {road.value} | {_WHO[s] if (s := ROADS[road]) else 'the speaker recorded, vouched for by the signature'} |"
        for road in Road
    ]
    return "\n".join([head, rule, *rows, *roads])
