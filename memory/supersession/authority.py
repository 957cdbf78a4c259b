"""Who may replace whose statement (pure): the authority table's rule (``ground.authority.may_hide``)
over the speakers of the two crystals.

A crystal is the person's when the person said it (or adopted it, by pinning). Text from anywhere
else (the agent, a captured turn, an indexed file, a dream, a peer) may not hide it, however
clearly it speaks of change: it only flags it "maybe outdated", for the person to review (``memory
show``, the dashboard), who then supersedes it by hand or says it again. Anyone else's words are
hidden only by a speaker that may supersede and stands as high (a quoted page hides nothing).

A skill or task pattern is hidden by nobody's text: a procedure is versioned (``skills edit
--text``; a paraphrase joins it as a version, ``memory.emerging.paraphrases``), and text the typer
took for a fact that reads like a change of it ("these days it is certbot renew") only flags it
"maybe outdated" (issue 49: paraphrases of a skill hid each other).
"""

from __future__ import annotations

from ground.authority import Speaker, may_hide
from memory.model import KNOWLEDGE_TYPES, Crystal


def is_the_persons(crystal: Crystal) -> bool:
    return crystal.speaker is Speaker.PERSON


def other_voice(one: Crystal, other: Crystal) -> bool:
    """Whether a transcript names two different people as the speakers of these words."""
    return one.voice is not None and other.voice is not None and one.voice != other.voice


def several_voices(crystal: Crystal) -> bool:
    """Whether a captured crystal holds more than its speaker's words: a line another name says
    ("Caroline: …" then "Melanie: …"), as a piece of a transcript with names is written."""
    if crystal.voice is None:
        return False
    said = {line.partition(":")[0].strip() for line in crystal.text.splitlines() if _said_by_line(line)}
    return len(said - {crystal.voice}) > 0


def _said_by_line(line: str) -> bool:
    """A line "Name: words"; not "(in answer to Name: a question)", which only frames the words."""
    head, colon, _ = line.partition(":")
    return bool(colon) and 0 < len(head.strip()) <= 40 and head == head.lstrip() and not head.startswith("(")


def may_supersede(new: Crystal, old: Crystal) -> bool:
    """Whether ``new`` may hide ``old`` from search and working memory. Two people of one
    transcript are the same speaker to the authority table, but never each other's voice: one
    person's news never hides another's (their names, ``voice``, differ)."""
    if other_voice(new, old):
        return False
    return old.semantic_type not in KNOWLEDGE_TYPES and may_hide(new.speaker, old.speaker)
