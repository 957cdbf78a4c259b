"""Cue words and shapes that tell the kind of a memory statement, beyond the words themselves.

The typer (``memory.cognition.typing``) learns word weights from a few hundred labelled
statements; words it never saw get no weight. These cues carry what a labeller knows about
English in general, so that "my stepdaughter", "every other Thursday" or "fold the dough" count
as kinship, recurrence or an instruction even when the exact word is new. Each cue is a feature
the model weighs like any word: nothing here decides a type by itself.

Cues are phrases of one to three tokens, looked up in one dictionary (a regular expression per
cue cost 140 µs a statement; the lookups cost a few).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.errors import InvalidValue

_DAYS = "monday, tuesday, wednesday, thursday, friday, saturday, sunday"
_MONTHS = "january, february, march, april, may, june, july, august, september, october, november, december"
_SEASONS = "spring, summer, autumn, fall, winter"


def _each(prefix: str, words: str, suffix: str = "") -> str:
    return ", ".join(f"{prefix}{w.strip()}{suffix}" for w in words.split(","))


# Each lexicon is a list of phrases, separated by commas; a phrase is one to three words as the
# tokenizer reads them ("in-law" is "in law", "can't" stays one word).
_KIN = """
brother, sister, brothers, sisters, mother, mum, mom, mama, father, dad, papa, son, sons, daughter, daughters, wife,
husband, spouse, partner, boyfriend, girlfriend, fiance, fiancee, fiancé, fiancée, uncle, aunt, auntie, cousin,
cousins, nephew, niece, grandma, grandpa, grandmother, grandfather, grandson, granddaughter, grandchild, grandchildren,
grandparents, granny, in law, stepmother, stepfather, stepson, stepdaughter, stepbrother, stepsister, stepmum, stepdad,
godson, goddaughter, godmother, godfather, twin, sibling, siblings, parents, kid, kids, children, child, baby, family,
relative, relatives, ex
"""
_ROLE = """
friend, friends, colleague, colleagues, coworker, co worker, manager, boss, mentor, mentee, neighbour, neighbor,
neighbours, landlord, landlady, tenant, roommate, flatmate, housemate, cofounder, co founder, teacher, therapist,
doctor, dentist, lawyer, accountant, plumber, electrician, babysitter, nanny, intern, client, investor, designer,
team lead, cto, ceo, vp, head of, reports to, report to, works with, married, dating, engaged, divorced, best man,
emergency contact, buddy, classmate, teammate, bandmate, supervisor, advisor, adviser, professor, coach
"""
_RECURRENCE = f"""
every, each, usually, typically, normally, regularly, routinely, routine, often, weekly, daily, nightly, monthly,
yearly, annually, quarterly, fortnightly, whenever, workflow, habitually, tends to, tend to, every other, twice a,
once a, per week, each time, every time, month end, most mornings, most evenings, most days, most nights, weekends,
{_each("", _DAYS, "s")}
"""
_PREFERENCE = """
prefer, prefers, preferred, preference, preferences, like, likes, liked, love, loves, enjoy, enjoys, enjoyed, hate,
hates, dislike, dislikes, detest, detests, favourite, favorite, rather, can't stand, cannot stand, not a fan, fan of,
fond of, keen on, would like, i'd like, rather than, no phone, no calls
"""
_GOAL = """
wants to, want to, wanted to, plans to, plan to, planning to, hopes to, hope to, hoping to, aims to, aim to, aiming,
aim is, goal, goals, target, trying to, tries to, try to, intends to, intend to, intention, ambition, dreams of,
dream of, would love to, i'd love to, resolution, working towards, working toward, working on, saving up, save up,
determined to, objective, wishes to, wish to, looking to, need to, needs to, by the end, someday, some day, one day
"""
_INSIGHT = """
realised, realized, realise, realize, realising, realizing, realisation, realization, noticed, lesson, lessons,
learned, learnt, takeaway, turns out, turned out, seems, seem, seemed, seemingly, apparently, appears, looks like,
it looks, pattern, suggests, suggest, conclusion, in hindsight, looking back, in retrospect, insight, evidently,
clearly, correlates, correlate, driven by, due to, caused by, because, the reason, root cause, common thread,
recurring theme, probably, which means, interesting, interestingly, observation, reflecting, i think, i suspect
"""
_PAST_TIME = f"""
yesterday, ago, this morning, this afternoon, this evening, earlier today, earlier this, tonight, today,
over the weekend, over easter, over christmas, during the, finally,
{_each("last ", _DAYS + ", night, week, weekend, month, year, sprint, session, time, " + _SEASONS)},
{_each("on ", _DAYS)}, {_each("in ", _MONTHS)}
"""
_PAST_VERBS = """
went, had, got, met, lost, took, broke, spent, ran, gave, flew, found, made, came, saw, told, said, did, was, were,
bought, sold, won, fell, left, began, drove, ate, wrote, sent, paid, caught, kept, hit, moved, decided, agreed,
celebrated, visited, called, signed, released, shipped, passed, failed, crashed, happened, stopped, started,
finished, presented, migrated, cancelled, canceled, argued, refactored, fixed, stolen, hacked, removed, broken, died,
hired, fired, quit
"""
_WISH = """
i want, i'd like, i would like, i hope, i plan, i'm planning, i am planning, my goal, our goal, we want, we hope
"""
_DIRECTIVE = """
please, don't, do not, never, always, make sure, remember to, be sure to, you should, you must, i want you,
ask before, ask me before, keep it, keep answers, keep the, no need to, avoid, call me, address me
"""
_THEN = "then, after that, afterwards, next, finally, until"
_COPULA = "is, are, has, have, runs, uses, holds, lives, works, costs, expires, born"
_FUTURE = f"""
will, next week, next month, next year, next quarter, this summer, this year, this winter, this spring, this autumn,
this quarter, by the end, by december, by march, by summer, before, soon, {_each("next ", _SEASONS)}
"""
_DATE_WORD = f"{_DAYS}, {_MONTHS}, {_SEASONS}, easter, christmas"
_GREETING = """
hi, hello, hey, thanks, thank, ok, okay, yes, yeah, yep, no, nope, sure, cool, great, fine, bye, lol, hmm, oops,
alright, right, good
"""
#: Words that start a how-to or an instruction ("To reset…", "Run…", "Steps…").
_HOWTO_START = """
to, how, step, steps, first, recipe, procedure, fix, fixing, use, run, open, click, go, add, remove, turn, hold, mix,
install, restart, reset, set, clear, pour, drain, press, select, type, copy, connect, unplug, replace, check, create,
delete, fill, wrap, put, take, make, apply, rinse, backing, converting, resetting, reindex, merge, debugging,
technique, trick, if, tip
"""

_LEXICONS = {
    "kin": _KIN, "role": _ROLE, "recurrence": _RECURRENCE, "preference": _PREFERENCE, "goal": _GOAL,
    "insight": _INSIGHT, "past_time": _PAST_TIME, "past_verb": _PAST_VERBS, "then": _THEN, "copula_fact": _COPULA,
    "future": _FUTURE, "date_word": _DATE_WORD, "wish": _WISH, "directive": _DIRECTIVE,
}  # fmt: skip


def _phrases(words: str) -> list[tuple[str, ...]]:
    phrases = [tuple(p.split()) for p in words.replace("\n", " ").split(",")]
    for phrase in phrases:
        if not 1 <= len(phrase) <= 3:
            raise InvalidValue(f"a cue phrase has one to three words: {phrase}")
    return phrases


def _index() -> dict[tuple[str, ...], frozenset[str]]:
    table: dict[tuple[str, ...], set[str]] = {}
    for cue, words in _LEXICONS.items():
        for phrase in _phrases(words):
            table.setdefault(phrase, set()).add(cue)
    return {phrase: frozenset(cues) for phrase, cues in table.items()}


_CUE_INDEX = _index()
#: One-word cues by their word (no tuple to build per token), and the phrases of two or three words.
_WORD_CUES = {phrase[0]: found for phrase, found in _CUE_INDEX.items() if len(phrase) == 1}
_PHRASE_CUES = {phrase: found for phrase, found in _CUE_INDEX.items() if len(phrase) > 1}
#: First words of those phrases: only after one of them is a longer phrase looked up.
_PHRASE_STARTS = frozenset(phrase[0] for phrase in _PHRASE_CUES)
_PERSON_WORDS = frozenset(p[0] for p in _phrases(_KIN + "," + _ROLE) if len(p) == 1)
_POSSESSIVES = frozenset(("my", "her", "his", "our", "their", "your"))
_DIGIT = re.compile(r"\d")
_HOWTO_WORDS = frozenset(p[0] for p in _phrases(_HOWTO_START))
_GREETING_WORDS = frozenset(p[0] for p in _phrases(_GREETING))
#: Code in a statement: a backtick, a prompt, a flag, sudo, a path, a call, a pipe, an assignment.
_CODE = re.compile(r"`|\$ |--|\bsudo |::|\\| \| |=|\w/\w|\w\.\w+\(")


def cues(tokens: Sequence[str], text: str) -> set[str]:
    """The cues present in a statement: ``tokens`` are its lowercased words, ``text`` the raw start."""
    found: set[str] = set()
    words, phrases = _WORD_CUES, _PHRASE_CUES
    for hit in map(words.get, tokens):
        if hit:
            found.update(hit)
    for i in [i for i, token in enumerate(tokens) if token in _PHRASE_STARTS]:
        for phrase in (tuple(tokens[i : i + 2]), tuple(tokens[i : i + 3])):
            hit = phrases.get(phrase)
            if hit:
                found.update(hit)
    if tokens:
        if tokens[0] in _HOWTO_WORDS:
            found.add("howto_start")
        if tokens[0] in _GREETING_WORDS:
            found.add("greeting")
    # "my sister", "her old roommate": a person named by their relation to someone.
    if not _POSSESSIVES.isdisjoint(tokens) and any(
        t in _POSSESSIVES and _PERSON_WORDS.intersection(tokens[i + 1 : i + 3]) for i, t in enumerate(tokens)
    ):
        found.add("possessive_person")
    if _CODE.search(text):
        found.add("code")
    if _DIGIT.search(text):
        found.add("number")
    stripped = text.rstrip()
    if stripped.endswith("?"):
        found.add("question")
    elif stripped.endswith("!"):
        found.add("exclaim")
    return found
