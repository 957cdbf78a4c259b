"""Unique tokens in varied natural sentences (pure): each message of the soak carries one token, so
the check can count, message by message, the crystals that hold it.

A token is a made-up name (``Zt`` + four syllables, e.g. ``Ztbakotu``): no dictionary word, no
secret's shape, and varied sentences around it, so that no legitimate rule of memory (deduplication
by content, supersession, consolidation) has reason to merge two messages into one crystal.
"""

from __future__ import annotations

import random
import re

_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]  # 70: four of them name 24 million tokens

#: The kinds of token: a transcript's message, an imported memory, a damaged line's words.
TRANSCRIPT, IMPORT, DAMAGED = "Zt", "Zm", "Zd"
TOKEN = re.compile(r"\bZ[tmd](?:[bdfgklmnprstvz][aeiou]){4}\b")

_PERSON = (
    "The {thing} for the {place} office is filed under {token}, ask {name} before changing it.",
    "{name} moved the {thing} review to {day}; the ticket is {token}.",
    "Our supplier {token} delivers the {thing} to the {place} warehouse every {day}.",
    "Remember that {token} is the codename {name} uses for the {thing} migration.",
    "I booked the {place} trip with the agency {token} for the {thing} workshop.",
    "The {thing} contract with {token} ends in {month}, and {name} wants to renew it.",
    "Please keep in mind that the {place} router is labelled {token} in the rack.",
    "{name}'s new {thing} is registered as {token} at the {place} depot.",
)
_AGENT = (
    "I updated the runbook so the {thing} entry now points at {token} in {place}.",
    "The deployment log shows {token} finished the {thing} job at {hour} o'clock.",
    "Added a reminder: {token} must be checked before the {month} audit of the {thing}.",
    "The spreadsheet row for {token} now lists {name} as owner of the {thing}.",
    "I created branch {token} with the {thing} fixes for the {place} team.",
    "Scheduled {token} to rebuild the {thing} cache every {day} night.",
)
_MEMORY = (
    "The user prefers {thing} deliveries through {token} in {place}.",
    "{name} is the contact at {token} for anything about the {thing}.",
    "The user's {thing} warranty number is {token}, valid until {month}.",
    "The user stays at {token} guesthouse when visiting {place}.",
)
_WORDS = {
    "thing": ("boiler", "invoice", "laptop", "garden shed", "payroll", "kiln", "piano", "van", "database",
              "newsletter", "roof", "bicycle", "greenhouse", "espresso machine", "backup drive"),
    "place": ("Lisbon", "Valencia", "Oslo", "Leeds", "Kraków", "Porto", "Ghent", "Tampere", "Bologna", "Cork"),
    "name": ("Marta", "Idris", "Chen", "Olu", "Priya", "Tomasz", "Aiko", "Rafael", "Sanna", "Dmitri"),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"),
    "month": ("January", "March", "May", "July", "September", "November"),
    "hour": ("six", "seven", "nine", "eleven", "two", "four"),
}  # fmt: skip


class Tokens:
    """Fresh tokens of one kind, in order, never the same twice within a run."""

    def __init__(self, kind: str, rng: random.Random) -> None:
        self.kind = kind
        self.rng = rng
        self.count = 0
        # A random start, so two soaks sharing a data dir (a re-run) would not collide.
        self._start = rng.randrange(len(_SYLLABLES) ** 4 // 2)

    def next(self) -> str:
        n = self._start + self.count
        self.count += 1
        syllables = [_SYLLABLES[(n // len(_SYLLABLES) ** i) % len(_SYLLABLES)] for i in range(4)]
        return self.kind + "".join(syllables)


def sentence(templates: tuple[str, ...], token: str, rng: random.Random) -> str:
    """One of ``templates`` filled with random words and ``token``."""
    template = rng.choice(templates)
    return template.format(token=token, **{key: rng.choice(words) for key, words in _WORDS.items()})


def person_says(token: str, rng: random.Random) -> str:
    return sentence(_PERSON, token, rng)


def agent_says(token: str, rng: random.Random) -> str:
    return sentence(_AGENT, token, rng)


def memory_says(token: str, rng: random.Random) -> str:
    return sentence(_MEMORY, token, rng)


def tokens_in(text: str) -> list[str]:
    return TOKEN.findall(text)
