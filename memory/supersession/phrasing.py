"""How a statement says that something changed: the words of a correction or an update, the old
value it names as no longer true, and the words that say it only adds to what was known.

Pure functions of text, used by ``memory.supersession.judge`` on each (older, newer) pair.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from memory.cognition.typing import stem
from memory.fts import STOPWORDS
from memory.supersession.instances import opening

# A value is one word however it is punctuated: "vpn2.example.org", "/mnt/share", "0.5", "8:30".
_WORD = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:/[\w.-]+)+|[^\W_]+(?:[./:-][^\W_]+)+|\d+(?:[.,:]\d+)*|[^\W_]+(?:['’][^\W_]+)?",
    re.UNICODE,
)

#: Phrases that say the statement replaces an earlier one, by strength. A correction ("actually",
#: "not X") or an end ("no longer") is near certain; a verb of change ("moved to", "raised") is
#: strong; "now" or "new" alone is only a hint, true of many statements that replace nothing.
_CORRECTION = (
    r"\bactually\b|\bcorrection\b|\bi was wrong\b|\bi mixed\b|\bmy mistake\b|\bsorry\b|^\s*no\s*[,;:.]|"
    r"\bno longer\b|\bnot\b[^.;]*\b(?:any ?more|any longer)\b|\b(?:any ?more|no more)\b|\binstead\b|"
    r"\bturns out\b|\bfrom now on\b|^\s*update\s*:|\bhas been replaced\b|"
    # a slip owned up to: "wrong digits", "I misread the email", "oops", "not Sitges after all"
    r"\b(?:had|got) (?:it|that|this) wrong\b|\bwrong (?:digits?|numbers?|date|day|time|name|address|one)\b|"
    r"\bmisread\b|\bmisheard\b|\bmistyped\b|\btypo\b|\boops\b|\bafter all\b|\bcorrected me\b|"
    r"\bconfused (?:\w+ ){0,2}with\b|\bmixed (?:\w+ )?up\b|\bthere(?:'s| is| are) no\b|"
    # a second look: "Wait, the meeting is at 18:30", "I read the note too fast"
    r"^\s*wait\s*[,!:.]|\bread (?:\w+ ){0,2}too (?:fast|quickly)\b"
)
#: "left" after these is a side, not a departure ("tyre pressure front left 2.4 bar").
_NOT_A_DIRECTION = "(?<!front )(?<!rear )(?<!back )(?<!the )(?<!top )(?<!bottom )(?<!upper )(?<!lower )"
_CHANGE = (
    r"\bmoved\b|\bmoving\b|\bchanged\b|\bswitched\b|\breplaced\b|\bmigrated\b|\bstopped\b|\bquit\b|"
    r"\brenamed\b|\brelocated\b|\btransferred\b|\brescheduled\b|\bpostponed\b|\bpushed (?:back|to)\b|"
    r"\bbrought forward\b|\bmoved up\b|\bwent (?:up|down)\b|\braised\b|\blowered\b|\bincreased\b|"
    r"\bdecreased\b|\bdropped\b|\bbumped\b|\bupgraded\b|\bdowngraded\b|\bextended\b|\bshortened\b|"
    # "cut" and "left" as verbs, not "a power cut" or "front left"
    r"\b(?:i|we|they|he|she|it|was|were|been|got|have|has|had)\s+cut\b|\bcut (?:to|down|back)\b|"
    + _NOT_A_DIRECTION
    + r"\bleft\b|"
    r"\breset\b|\brenewed\b|\bsold\b|\btraded\b|\bgave (?:\w+ ){0,3}away\b|\bresigned\b|\bretired\b|"
    r"\bjoined\b|\btook over\b|\bstarted\b|\bbecame\b|\bis now\b|\bare now\b|\bgot a new\b|\bhas a new\b|"
    r"\bdelayed\b|\bended up\b|\bgone off\b|\bfell out\b|\bno more\b|\bnowadays\b|\bthese days\b|\bclosed\b|"
    r"\bgot a (?:new )?job\b|\bnew job\b|\brewritten\b|\brebuilt\b|\bported\b|\bconverted\b|\bredone\b|"
    r"\bshifted\b|\bcancell?ed\b|\bswapped\b|\bditched\b|"
    # a change of pay: "got a raise to 42,000"
    r"\bgot (?:a |her |his |my |their )?(?:raise|pay rise|promotion|promoted|demoted)\b|"
    r"\b(?:raise|rise|increase|reduction) to\b|\b(?:slipped|slid|upped) (?:\w+ ){0,3}?to\b"
)
#: "new" names a kind of person or a proper name, not a change: "the new hire", "New Year".
_NOT_A_CHANGE_NEW = (
    r"(?!\s+(?:hire|hires|joiner|joiners|starter|starters|recruit|recruits|client|clients|customer|customers|"
    r"patient|patients|student|students|member|members|colleague|colleagues|york|year|years|zealand|jersey)\b)"
)
_HINT = (
    r"\bnow\b|\bnew\b" + _NOT_A_CHANGE_NEW + r"|\bsince\b|\bfrom (?:next|this) \w+\b|\bas of\b|\bupdated?\b|"
    r"\bfrom (?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\bfrom tomorrow\b|"
    r"\bstarting (?:\w+ )?(?:today|tomorrow|\w+day)\b|"
    # a change of standing says which of a person's facts changed only by meaning ("Joan got
    # engaged" ends "Joan is single", not "Joan lives in Gràcia"): a hint, not a verb of change
    r"\bgot (?:engaged|married|divorced)\b|\bbroke up\b|\bsplit up\b"
)
#: Words that add to what was known rather than replace it ("I also have a bicycle").
#: "too" adds only at the end of a clause ("I have a cat too"), not before a word ("too fast").
_ADDITION = r"\balso\b|\btoo\b(?=\s*(?:[.,;:!?)]|$))|\bas well\b|\banother\b|\bin addition\b|\bbesides\b|\bas well as\b"

_STRENGTHS = ((re.compile(_CORRECTION, re.IGNORECASE), 1.0), (re.compile(_CHANGE, re.IGNORECASE), 0.8))
_HINT_RE = re.compile(_HINT, re.IGNORECASE)
_ADDITION_RE = re.compile(_ADDITION, re.IGNORECASE)

#: What follows these names the old value: "not Riga", "no longer Dr. Hansen", "instead of the
#: train", "from VS Code to Neovim", "sold the Toyota", "replaced Jenkins with…".
_NEGATED = re.compile(
    r"\b(?:not|no longer|instead of|rather than|from(?=\s+[\w./@:-]+(?:\s+[\w./@:-]+){0,2}\s+to\b)|"
    r"sold|traded|replaced|dropped|quit|stopped using|finished|completed|done with|cancell?ed|ditched|"
    + _NOT_A_DIRECTION
    + r"left|"
    r"stopped|gave|gone off|moved from|switched from|away from|fell out with|no more|"
    r"(?:does|do|did|is|are|was|were|has|have|wo|ca)n['’]?t)\s+"
    r"([\w./@:-]+(?:\s+[\w./@:-]+){0,3})",
    re.IGNORECASE,
)

#: Words too general to say two statements are about the same thing: light verbs, titles, time
#: words that any two statements may share.
_GENERAL_WORDS = """
use used using uses is are was were be been has have had get got go goes went make made do does did
dr mr mrs ms now new since week weeks month months year years day days today last next this
every also still just one two three time times
"""
_GENERAL = frozenset(_GENERAL_WORDS.split())


@dataclass(frozen=True, slots=True)
class Change:
    """What a statement says about change: how sure (0: nothing, up to 1: a correction), and the
    phrase that said it."""

    strength: float
    phrase: str | None


def change_cue(text: str) -> Change:
    for pattern, strength in _STRENGTHS:
        found = pattern.search(text)
        if found:
            return Change(strength, found.group(0).strip().lower())
    hint = _HINT_RE.search(text)
    return Change(0.5, hint.group(0).lower()) if hint else Change(0.0, None)


def adds_only(text: str) -> bool:
    """The statement says it adds to what was known ("also", "another"), replacing nothing."""
    return _ADDITION_RE.search(text) is not None


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _content(word: str) -> str | None:
    """A word's stem if it carries meaning: no stopwords, light verbs or titles; a possessive
    counts as its owner ("Anna's" is "anna"); a number or an address is kept whole."""
    if word[0].isdigit() or (not word.isalpha() and not word.endswith(("'s", "’s"))):
        return word
    word = word.removesuffix("'s").removesuffix("’s")
    if word in STOPWORDS or word in _GENERAL or len(word) < 2:
        return None
    return stem(word)


def content_stems(text: str) -> set[str]:
    """The stems of the words that carry meaning (see ``_content``)."""
    return {c for c in map(_content, words(text)) if c is not None}


#: Only the words that deny a value ("not the 15th", "no longer Dr. Hansen", "instead of the train"),
#: not the verbs that also name one ("gave 35 pounds", "sold 9 jars"): a correction of this statement.
_DENIED = re.compile(
    r"\b(?:not|no longer|instead of|rather than|there(?:'s| is| are) no|"
    r"(?:does|do|did|is|are|was|were|has|have|wo|ca)n['’]?t)\s+"
    r"([\w./@:-]+(?:\s+[\w./@:-]+){0,3})",
    re.IGNORECASE,
)


def _named_by(pattern: re.Pattern[str], text: str) -> set[str]:
    """The content stems of what each match of ``pattern`` names in its first group."""
    out: set[str] = set()
    for found in pattern.finditer(text):
        out |= content_stems(found.group(1))
    return out


def denied_stems(text: str) -> set[str]:
    """The stems of what the statement denies outright (a narrower ``negated_stems``)."""
    return _named_by(_DENIED, text)


_DETERMINER_WORDS = "the a an our my your his her their its this that"
_DETERMINERS = frozenset(_DETERMINER_WORDS.split())


def subject_phrase(text: str) -> tuple[str, ...]:
    """The content words of a statement's opening noun phrase, after its discourse words and its
    determiner: "Actually, the staging database runs on db2" -> ("staging", "database", "run");
    "Lisbon team standup is at 9:30" -> ("lisbon", "team", "standup")."""
    tokens = words(opening(text))  # "Actually, the production database …" opens with its subject too
    if not tokens:
        return ()
    phrase = []
    for word in tokens[1:5] if tokens[0] in _DETERMINERS else tokens[:4]:
        current = _content(word)
        if current is None or not current.isalpha():
            break
        phrase.append(current)
    return tuple(phrase)


#: "on the new test box" is a place another thing went to, not the thing the statement is about.
_NEW_THING = re.compile(r"(?<!\bon the )(?<!\bat the )(?<!\bin the )\bnew\s+([^\W_]+)", re.UNICODE)


def new_things(text: str) -> set[str]:
    """Stems of what the statement calls new: "my new phone number" -> {"phone"}."""
    return {c for w in _NEW_THING.findall(text) if (c := _content(w.lower())) is not None}


#: What comes before these names the old value: "#search-dev was archived ages ago" (of things, not
#: people: "Sven is retired" ends nothing he was said to be).
_ENDED = re.compile(
    r"([\w#./@:-]+(?:\s+[\w#./@:-]+){0,2})\s+(?:was|were|has been|have been|got)\s+"
    r"(?:archived|deprecated|discontinued|shut down|decommissioned|cancell?ed|dropped|scrapped|abolished|removed)\b",
    re.IGNORECASE,
)
#: A verb of change and the thing it moves: "Moved the spare key to the lockbox" -> "the spare key".
_CHANGED_THING = re.compile(
    r"\b(?:moved|shifted|switched|changed|rescheduled|relocated|transferred|pushed|bumped|renamed|"
    r"raised|lowered|increased|decreased|cut|extended|shortened)\s+([\w\s'’-]{1,40}?)\s+(?:to|from|into|over|back|up|down)\b",
    re.IGNORECASE,
)


def negated_stems(text: str) -> set[str]:
    """The stems of what the statement names as no longer so."""
    return _named_by(_NEGATED, text) | _named_by(_ENDED, text)


def changed_things(text: str) -> set[str]:
    """The stems of what a verb of change acts on: "Moved the spare key to …" -> {"spare", "key"}."""
    return _named_by(_CHANGED_THING, text)


_POSSESSIVE = re.compile(r"\b([^\W_]+)(?:'s|’s)\s+(?:(?:new|old|current|former|latest)\s+)?([^\W_]+)", re.UNICODE)


def possessions(text: str) -> set[tuple[str, str]]:
    """(owner, thing) stems of each possessive: "Tomas's brother" -> ("tomas", "brother")."""
    return {(stem(a.lower()), stem(b.lower())) for a, b in _POSSESSIVE.findall(text)}


#: A capitalised word inside a sentence: a name ("Dr." and the like do not end a sentence).
_NAME = re.compile(r"(?<!^)(?<![.!?] )\b[A-Z][\w-]+|\b[a-z]+[A-Z]\w*")
_TITLE = re.compile(r"\b(Dr|Mr|Mrs|Ms|St|Prof)\.")


def _names(text: str) -> list[str]:
    return _NAME.findall(_TITLE.sub(r"\1", text))


# The kind of value a word names: two statements about one slot name values of one kind ("Tuesdays"
# and "Thursday", "2 am" and "4 am", "Dr. Hansen" and "Dr. Berg").
_TIME = re.compile(r"^\d{1,2}[:.]\d{2}$|^(?:am|pm|morning|mornings|afternoon|afternoons|evening|evenings|noon)$")
_DAY = re.compile(
    r"^(?:mon|tues|wednes|thurs|fri|satur|sun)days?$|^(?:days?|weekends?|weeks?|daily|weekly|monthly|fortnightly)$"
)
_DATE = re.compile(
    r"^(?:(?:early|mid|late)-)?(?:january|february|march|april|may|june|july|august|september|october|november|december)$|"
    r"^\d{1,2}(?:st|nd|rd|th)$|^(?:spring|summer|autumn|winter|term|quarter)$|^(?:19|20)\d\d$"
)
_ADDRESS = re.compile(r"@|^/|^[\w-]+(?:\.[\w-]+)+$")
_NUMBER = re.compile(
    r"^\d[\d,.]*%?$|^[a-z]+\d+$|^(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twice|once)$"
)


#: Words after an amount that give its rate, not what it measures ("850 a month").
_RATE_WORD_LIST = "a an per each every day days week weeks month months year years hour hours"
_RATE_WORDS = frozenset(_RATE_WORD_LIST.split())


def measures(text: str) -> set[str]:
    """What the text's amounts count, by the word after each ("4,500 km" -> "km", "2x11 gears" ->
    "gear"): two amounts of different things fill different slots."""
    tokens = words(text)
    out = set()
    for number, after in itertools.pairwise(tokens):
        if _NUMBER.search(number) and after.isalpha() and after not in STOPWORDS and after not in _RATE_WORDS:
            out.add(stem(after))
    return out


def _kind(word: str, names: set[str]) -> str | None:
    for kind, pattern in (("time", _TIME), ("day", _DAY), ("date", _DATE), ("address", _ADDRESS)):
        if pattern.search(word):
            return kind
    if _NUMBER.search(word):
        return "number"
    return "name" if word in names else None


_LOCATIVE = frozenset(["in", "at", "to", "into", "from", "on", "near", "onto"])


def values(text: str) -> dict[str, str]:
    """Each word of the text that names a value, by its stem, with its kind: a time, a day, a date,
    an address, a number, a place (a name after "in", "at", "to"…) or a name (a capitalised word
    inside a sentence)."""
    names = {n.lower() for n in _names(text)}
    out = {}
    previous = ""
    for word in words(text):
        kind = _kind(word, names)
        if kind == "name" and previous in _LOCATIVE:
            kind = "place"
        if kind is not None:
            out[stem(word) if word.isalpha() else word] = kind
        previous = word
    return out


def stems(text: str) -> set[str]:
    """Every word's stem, stopwords included (what ``values`` keys are compared with)."""
    return {stem(w) if w.isalpha() else w for w in words(text)}
