"""One policy for every road into the agent's context, and out of the node (pure).

Every route that carries a memory's text somewhere the agent (or a remote model) reads it asks
``decide`` how: as it is, marked as someone else's, with its secrets replaced, as a stand-in, or
never. The facts it decides on: who said the text (its speaker: what the authority table,
``ground.authority``, lets it do), whether it waits in quarantine, whether the sensitivity rules
call it confidential, and whether it reads like instructions to the agent. The README's gate table
is ``table()``; a test checks every route against every combination.
"""

from __future__ import annotations

from enum import StrEnum

from ground.authority import Capability, Speaker, may


class Route(StrEnum):
    MEMORY_MD = "MEMORY.md"
    BOOTSTRAP = "bootstrap text"
    DREAM_PROMPT = "dream prompt"
    CURIOSITY_GAP = "curiosity gap in MEMORY.md"
    SEARCH_RESULT = "search result (API, MCP, dashboard)"
    LLM_ENDPOINT = "[llm] endpoint (typer, judge, dream)"
    REMOTE_EMBEDDER = "remote embedder"


class Passage(StrEnum):
    AS_IS = "as is"
    MARKED = "marked as another's"
    REDACTED = "secrets replaced"
    STAND_IN = "a stand-in"
    NEVER = "never"


#: Routes that end in the agent's system prompt or a model's prompt.
PROMPT_ROUTES = frozenset({Route.MEMORY_MD, Route.BOOTSTRAP, Route.DREAM_PROMPT, Route.CURIOSITY_GAP})


def decide(route: Route, *, speaker: Speaker, held: bool, confidential: bool, instructions: bool) -> Passage:
    """How ``route`` may carry a text with these facts."""
    if held:  # waits for the person: only a search that asks for held content shows it, marked
        return Passage.MARKED if route is Route.SEARCH_RESULT else Passage.NEVER
    if confidential:
        return {
            Route.BOOTSTRAP: Passage.STAND_IN,
            Route.REMOTE_EMBEDDER: Passage.REDACTED,
            Route.SEARCH_RESULT: Passage.AS_IS,  # the local agent asked for it; it never leaves the machine
        }.get(route, Passage.NEVER)
    if route is Route.CURIOSITY_GAP and instructions:
        return Passage.NEVER  # a search's words, written to steer the agent
    if route in PROMPT_ROUTES or route is Route.SEARCH_RESULT:
        if not may(speaker, Capability.PROMPT_UNMARKED):
            return Passage.MARKED  # a stranger's words (a peer, a file, a page the agent quoted): data
        if instructions and not may(speaker, Capability.DIRECT) and route is not Route.SEARCH_RESULT:
            return Passage.MARKED  # an order only the person gives: in the prompt it is someone's words
    return Passage.AS_IS


#: What a line of someone else's words starts with wherever it reaches the agent's prompt (MEMORY.md,
#: the bootstrap, a dream prompt): data someone wrote, never the person's words or instructions.
MARKS = {
    Speaker.PERSON: "",
    Speaker.AGENT: "[the agent's note, not the person's words] ",
    Speaker.PERSON_IN_TRANSCRIPT: "[said in a conversation, not an order] ",
    Speaker.AGENT_IN_TRANSCRIPT: "[from a conversation, with words not the person's] ",
    Speaker.FILE: "[from an imported file] ",
    Speaker.PEER: "[from another node] ",
    Speaker.SELLER: "[from a seller] ",
    Speaker.NODE: "[the node's inference] ",
}


def marked(text: str, speaker: Speaker, passage: Passage) -> str:
    """``text`` with its speaker's mark when ``passage`` says it is marked."""
    return MARKS[speaker] + text if passage is Passage.MARKED else text


def admits_sql(route: Route, alias: str = "c") -> str:
    """The SQL twin of ``decide`` for selecting rows ``route`` may carry at all: a WHERE fragment leaving
    out held and confidential crystals where the gate says never, so a query and the policy cannot drift
    apart. The speaker and instruction-likeness decide the marking, per row, afterwards."""
    clauses = []
    if all(
        decide(route, speaker=speaker, held=True, confidential=confidential, instructions=False) is Passage.NEVER
        for speaker in Speaker
        for confidential in (False, True)
    ):
        clauses.append(f"{alias}.quarantined = 0")
    if all(
        decide(route, speaker=speaker, held=held, confidential=True, instructions=False) is Passage.NEVER
        for speaker in Speaker
        for held in (False, True)
    ):
        clauses.append(f"{alias}.sensitivity != 'confidential'")
    return " AND ".join(clauses) or "1"


def table() -> str:
    """The gate as a Markdown table: a row per situation, a column per route."""
    situations = [
        ("the person's own text", dict(speaker=Speaker.PERSON, held=False, confidential=False, instructions=False)),
        ("the agent's or a captured user turn's text", dict(speaker=Speaker.AGENT, held=False, confidential=False,
                                                            instructions=False)),
        ("the agent's text that reads like instructions", dict(speaker=Speaker.AGENT, held=False,
                                                               confidential=False, instructions=True)),
        ("a captured assistant turn, a file, another node, released", dict(speaker=Speaker.PEER, held=False,
                                                                           confidential=False, instructions=False)),
        ("another node's text, held", dict(speaker=Speaker.PEER, held=True, confidential=False, instructions=False)),
        ("confidential (anyone's)", dict(speaker=Speaker.PERSON, held=False, confidential=True, instructions=False)),
        ("the person's search that reads like instructions", dict(speaker=Speaker.PERSON, held=False,
                                                                  confidential=False, instructions=True)),
    ]  # fmt: skip
    head = "| | " + " | ".join(route.value for route in Route) + " |"
    rule = "|---|" + "---|" * len(Route)
    rows = [
        f"| {name} | " + " | ".join(decide(route, **facts).value for route in Route) + " |"  # type: ignore[arg-type]
        for name, facts in situations
    ]
    return "\n".join([head, rule, *rows])
