"""Who and what a text names: people, places, organisations, projects and things, offline and by
rule (pure: words in, mentions out; no model to download).

What counts as a mention:

- **the voice**: the name a transcript gives whoever said the words (``Crystal.voice``) is a person
  the words are about ("I started pottery" said by Caroline is about Caroline); "user" and
  "assistant" are roles, not names;
- **names**: runs of capitalised words ("Lisbon", "Gina Torres", "Bank of Portugal"), but not a
  common word that only starts a sentence ("Yesterday", "Went"), not a month or a weekday, and not
  "I"; a name after "in", "to", "from", "at", "near" is a place, one ending in "University",
  "Inc", "Bank" ... an organisation, one after "project" or before "project"/"app" a project;
- **relations**: "Caroline's sister", "my dog", "her boss": a person (or pet) known by whom they
  belong to. "my" belongs to the voice; "his"/"her"/"their" to the one other person the text (or its
  context) names, and to nobody when it names none or several (a guess would join two people). A
  relation followed by a name ("my sister Ana", "my dog Pierogi") makes the name its alias.

A mention's ``key`` is what joins it across crystals and sessions: lower case, single spaces,
straight apostrophes, no possessive "'s".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


class Kind(StrEnum):
    PERSON = "person"
    PLACE = "place"
    ORGANISATION = "organisation"
    PROJECT = "project"
    THING = "thing"  # named, but not known to be any of the above


class Role(StrEnum):
    VOICE = "voice"  # said the words
    NAMED = "named"  # named in them
    RELATION = "relation"  # known by whom they belong to ("Caroline's sister")


@dataclass(frozen=True, slots=True)
class Mention:
    name: str  # as written, possessive dropped: "Caroline", "Caroline's sister"
    key: str  # what joins mentions (``entity_key``)
    kind: Kind
    role: Role
    #: a relation's owner (its key), and a name the relation was given right after it
    owner: str | None = None
    alias: str | None = None


#: Words that are roles in a transcript, not names of anyone.
ROLE_NAMES = frozenset({"user", "assistant", "system", "tool", "agent", "bot", "human", "me", "you"})

_MONTHS = (
    "january february march april may june july august september october november december"
    " jan feb mar apr jun jul aug sep sept oct nov dec"
)
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
#: Capitalised words that start sentences or are capitalised by habit, never a name alone.
_COMMON = frozenset(
    (
        _MONTHS
        + " "
        + _DAYS
        + " i i'm i've i'll i'd im ive a an the this that these those it its it's we we're we've you you're"
        " your he she they they're them his her their our my me us there here what when where who whom why"
        " how which whose whatever and but or so if then because though although also actually anyway well"
        " oh ah hey hi hello yes yeah yep no nope not ok okay sure thanks thank wow great good nice cool"
        " awesome amazing lol haha just maybe perhaps probably honestly really still even only now today"
        " tomorrow yesterday tonight last next this morning evening afternoon night weekend after before"
        " since until during while once later soon already always never sometimes often usually do does"
        " did done don't doesn't didn't is are was were be been being am isn't aren't wasn't weren't have"
        " has had having haven't hasn't can can't could couldn't would wouldn't should shouldn't will"
        " won't shall may might must let let's please sorry congrats congratulations glad happy sad love"
        " like hope wish think thought guess know knew see saw look looking went go going got get getting"
        " made make making took take taking came come coming said say tell told asked ask new old first"
        " second one two three some any all every each many much more most few lots lot other another"
        " such same different big small great little long short sounds seems seemed feel felt totally"
        " definitely absolutely exactly right true speaking talking same both either neither none nothing"
        " something anything everything someone anyone everyone nobody somebody anybody everybody"
        " mom mum dad mother father sister brother wife husband friend friends family kids dear"
        " remember btw fyi p.s ps re note update edit todo fact idea tip step meeting"
    ).split()
)
_PLACE_BEFORE = frozenset({"in", "to", "from", "at", "near", "visited", "visiting", "around", "across", "into"})
_ORG_WORDS = _words(
    "university college school academy institute hospital clinic bank inc ltd llc corp corporation "
    "company co group club association society foundation agency council ministry department studio "
    "labs lab museum library church centre center"
)
_WITH_SOMEONE = frozenset({"with", "told", "asked", "met", "called", "texted", "thanks", "thank"})
_SOMEONE_DOES = _words("said says told tells asked asks thinks thought wants wanted is was and who")
_PROJECT_WORDS = frozenset({"project", "app", "repo", "library", "startup", "podcast", "blog", "channel"})
#: Who or what someone has: "my sister", "Caroline's dog". Plural and singular.
RELATIONS = _words(
    "sister sisters brother brothers mom mum mother dad father parents parent son sons daughter "
    "daughters kid kids child children baby husband wife partner spouse fiance fiancee fiancé fiancée "
    "boyfriend girlfriend friend friends bestie roommate flatmate neighbor neighbour neighbors "
    "neighbours boss manager coworker coworkers colleague colleagues mentor mentee teacher student "
    "students coach therapist doctor grandma grandmother grandpa grandfather grandparents aunt uncle "
    "cousin cousins niece nephew family dog dogs cat cats pet pets puppy kitten horse team landlord "
    "client clients cofounder co-founder"
)
_PETS = frozenset({"dog", "dogs", "cat", "cats", "pet", "pets", "puppy", "kitten", "horse"})
_PRONOUN_OWNERS = frozenset({"his", "her", "their"})

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'"})
_TOKEN = re.compile(r"[A-Za-z\u00C0-\u024F][A-Za-z\u00C0-\u024F0-9'\u2019\-]*|[.!?:;\n]")
#: Lower-case words allowed inside a name: "Bank of Portugal", "Leonardo da Vinci".
_CONNECTORS = frozenset({"of", "de", "da", "del", "van", "von", "la", "le", "du", "der", "den"})
MAX_NAME_WORDS = 5
#: "You've", "Don't", "We'll": a contraction is never a name.
_CONTRACTIONS = ("'ve", "'ll", "'d", "'re", "n't", "'m")
_SENTENCE_ENDS = frozenset(".!?:;\n")
MAX_MENTIONS = 40  # per text: a page of names says little about each


def entity_key(name: str) -> str:
    """What joins mentions of one entity: "Caroline's" and "caroline" are one key."""
    text = " ".join(name.translate(_APOSTROPHES).lower().split())
    return re.sub(r"'s\b|'$", "", text).strip(" .,-'")


def is_name(voice: str | None) -> bool:
    """Whether a transcript's speaker is a name (not a role like "user")."""
    return bool(voice) and entity_key(voice or "") not in ROLE_NAMES and len(voice or "") <= 60


def mentions(text: str, *, voice: str | None = None, context: str | None = None) -> list[Mention]:
    """The entities ``text`` names (each key once, first kind wins), its voice first; ``context`` (the
    turn before, say) only settles whom "his"/"her" means."""
    found: dict[str, Mention] = {}

    def add(mention: Mention) -> None:
        if mention.key and mention.key not in found and len(found) < MAX_MENTIONS:
            found[mention.key] = mention

    voice_key = entity_key(voice) if voice and is_name(voice) else None
    if voice and voice_key:
        add(Mention(voice.strip(), voice_key, Kind.PERSON, Role.VOICE))
    names = list(_names(text))
    for name, kind in names:
        add(Mention(name, entity_key(name), kind, Role.NAMED))
    # who "her" may be: a person named here or just before, not the name a relation is given
    given = {entity_key(a) for a in _RELATION_ALIAS.findall(text.translate(_APOSTROPHES))}
    others = {entity_key(n) for n, k in names if k in (Kind.PERSON, Kind.THING)} - given - {voice_key}
    if context:
        others |= {entity_key(n) for n, k in _names(context) if k in (Kind.PERSON, Kind.THING)} - {voice_key}
    # "her sister" belongs to the one other person named here; with none or several, to nobody
    pronoun_owner = next(iter(others)) if len(others) == 1 else None
    for relation in _relations(text, voice_key, pronoun_owner):
        add(relation)
    return list(found.values())


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.translate(_APOSTROPHES))


def _names(text: str) -> Iterable[tuple[str, Kind]]:
    tokens = _tokens(text)
    i, start_of_sentence = 0, True
    while i < len(tokens):
        token = tokens[i]
        if token in _SENTENCE_ENDS:
            i, start_of_sentence = i + 1, True
            continue
        if not _capitalised(token) or _plain(token, start_of_sentence):
            i, start_of_sentence = i + 1, False
            continue
        run = [token]
        j = i + 1
        while j < len(tokens) and len(run) < MAX_NAME_WORDS:
            nxt = tokens[j]
            if _capitalised(nxt) and _base(nxt).lower() not in _COMMON:
                run.append(nxt)
                j += 1
            elif nxt in _CONNECTORS and j + 1 < len(tokens) and _capitalised(tokens[j + 1]):
                run += [nxt, tokens[j + 1]]
                j += 2
            else:
                break
        name = " ".join(_base(w) for w in run)
        before = tokens[i - 1].lower() if i else ""
        after = tokens[j].lower() if j < len(tokens) else ""
        yield name, _kind(name, before, after)
        i, start_of_sentence = j, False


def _capitalised(token: str) -> bool:
    return (token[:1].isupper() and not token.isupper()) or (token.isupper() and 2 <= len(token) <= 6)


def _base(token: str) -> str:
    return re.sub(r"'s$|'$", "", token)


def _plain(token: str, start_of_sentence: bool) -> bool:
    """A capitalised word that is no name: "I", a month, a weekday, or a common word that starts a
    sentence (mid-sentence, a capital is taken at its word)."""
    word = _base(token).lower()
    if word in {"i", "i'm", "i've", "i'll", "i'd"} or _calendar(word) or word.endswith(_CONTRACTIONS):
        return True
    return start_of_sentence and (word in _COMMON or word in RELATIONS or word in common_words())


@cache
def common_words() -> frozenset[str]:
    """``data/common_words.txt`` (how it was made is said at its top): about 16,000 words, 1.5 MB
    held once read."""
    text = (Path(__file__).parent / "data" / "common_words.txt").read_text(encoding="utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def _calendar(word: str) -> bool:
    return word in _MONTHS.split() or word in _DAYS.split()


def _kind(name: str, before: str, after: str) -> Kind:
    words = name.lower().split()
    if words[-1] in _ORG_WORDS or words[0] in {"university", "bank"}:
        return Kind.ORGANISATION
    if before == "project" or after in _PROJECT_WORDS:
        return Kind.PROJECT
    if before in _PLACE_BEFORE:
        return Kind.PLACE
    if before in _WITH_SOMEONE or after in _SOMEONE_DOES:
        return Kind.PERSON
    return Kind.THING


_RELATION = re.compile(
    r"\b(?P<owner>(?i:my|his|her|their|our)|(?P<named>[A-Z][\w\-]*(?: [A-Z][\w\-]*)?)'s?)\s+"
    r"(?:(?:little|big|older|younger|best|new|old|eldest|oldest|youngest|twin|step|baby)\s+)?"
    rf"(?P<relation>{'|'.join(sorted(RELATIONS, key=len, reverse=True))})\b"
    r"(?:,?\s+(?P<alias>[A-Z][\w\-]+(?: [A-Z][\w\-]+)?))?"
)


_RELATION_ALIAS = re.compile(
    rf"\b(?:{'|'.join(sorted(RELATIONS, key=len, reverse=True))}),?\s+([A-Z][\w\-]+(?: [A-Z][\w\-]+)?)"
)


def _relations(text: str, voice_key: str | None, pronoun_owner: str | None) -> Iterable[Mention]:
    for found in _RELATION.finditer(text.translate(_APOSTROPHES)):
        said_owner = found.group("owner").lower()
        if found.group("named"):
            owner = entity_key(found.group("named"))
            if owner in _COMMON or owner in ROLE_NAMES:
                continue
        elif said_owner == "my":
            owner = voice_key or ""
        elif said_owner in _PRONOUN_OWNERS:
            owner = pronoun_owner or ""
        else:
            owner = ""  # "our": the voice and someone else
        if not owner:
            continue
        relation = found.group("relation").lower()
        alias = found.group("alias")
        if alias is not None and (_base(alias).lower() in _COMMON or _calendar(alias.lower())):
            alias = None
        name = f"{_display(owner)}'s {relation}"
        kind = Kind.THING if relation in _PETS else Kind.PERSON
        yield Mention(name, entity_key(name), kind, Role.RELATION, owner=owner, alias=alias and _base(alias))


def _display(key: str) -> str:
    return " ".join(word.capitalize() for word in key.split())


def is_common_word(word: str) -> bool:
    """A word that names nothing alone ("went", "may", "sister")."""
    return word in _COMMON or word in RELATIONS or _calendar(word) or word in common_words()
