"""Whether words read as a procedure (pure): what a ``skill`` or ``task_pattern`` must be, so that a
chat line is never typed as one for its topic alone (issue 52: about a third of a ChatGPT export was
typed skill or task pattern, and Emerging Skills listed "My payday is the 15th" at 97 %).

A procedure says what to do or how it is done:
- "you <verb of doing>" ("you hold the button"), or a sentence that starts with one, three words
  or more ("Run the migrations first", "Always rotate the logs before a deploy"), or "to <verb> ...,
  <verb> ..." ("To reset it, hold the button");
- "how to", a numbered or bulleted list, or two or more words of sequence (first, then, after that,
  finally, before, once);
- a habit of doing: "I always / usually / never <verb>", "whenever ..., I ...", something done
  every morning, each sprint, on Tuesdays, weekly; a condition and what to do ("If it won't drain,
  clean the filter");
- a command: backticks, "$ ", a --flag, sudo.
The turn's speaker ("Caroline: ") is not read as words.
"""

from __future__ import annotations

import re


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_VERBS = _words(
    """
    add adjust apply ask avoid back bake book boil build bump call cancel change charge check chop clean
    clear click clone close commit compile configure connect convert copy create cut debug delete deploy
    disable disconnect do download drain drink eat edit email enable enter export feed fetch file fill
    filter find fix flush follow format freeze generate get give go grep heat hit hold import include
    install keep kill label launch leave let link list load lock log make mark measure merge message
    migrate mix mount move mute note open order pack paste pay pick pin ping pipe place plug pour
    preheat prepare press print pull push put read reboot rebuild record refresh reinstall reload
    remember remove rename renew repeat replace reply report request reset resize restart restore
    retry return review roll rotate run save scan schedule scroll search select send set ship shut sign
    skip sleep soak sort source split squash ssh start stir stop store stretch submit swap switch sync
    tag take tap test text tighten toggle track try turn type unlock unmount unplug update upgrade
    upload use vacuum verify wait walk warm wash watch water wipe wrap write raise reheat cover blend
    draw pour sharpen unclog drop hang plant sweep dust vacuum iron fold rinse dry scrub spray reindex
    tuck swaddle patch profile descale speed wrap spread sand paint encrypt regenerate rebase review
    generate service onboard export
    """
)
_PRONOUNS = _words("i we he she they it you my our his her their")
_ADVERBS = _words("always never usually first then just simply carefully quickly")
_SEQUENCE = re.compile(r"\b(first|then|after that|afterwards|finally|next|once done|before that|step \d)\b", re.I)
_HOW_TO = re.compile(r"\bhow to\b|\bsteps?\b.*:|\brecipe\b", re.I)
_LIST = re.compile(r"^\s*(?:\d+[.)]|[-*\u2022])\s+\S", re.M)
_COMMAND = re.compile(r"`[^`]+`|(?:^|\s)\$ \S|(?:^|\s)--?[a-z][\w-]+|\bsudo\b")
#: An instruction to the one reading: "you hold the button", "you just press reset".
_YOU_DO = re.compile(r"\byou\s+(?:just\s+|then\s+|first\s+)?([a-z]+)\b", re.I)
_HABIT = re.compile(
    r"\b(?:i|we|you)\s+(?:always|usually|normally|never|typically|tend to)\s+\w+|\b(?:whenever|every time)\b", re.I
)
_TO_DO = re.compile(r"^to\s+([\w-]+)\b[^,:]{0,80}[,:]\s*(?:you\s+|just\s+)?(\S+)", re.I)
#: "If it won't drain, clean the filter"; "When a build breaks, I look at the last commits first".
_CONDITION = re.compile(r"^(?:if|when|whenever|before|after|once)\b[^,]{0,80},\s*(?:(i|we)\s+)?(\w+)", re.I)
_RECURRING = re.compile(
    r"\bevery\s+\w+|\beach\s+(?:other\s+|couple of\s+|few\s+)?(?:\w+day|morning|evening|night|week|"
    r"weekend|month|year|quarter|sprint|time|release|deploy)s?\b|\bon\s+\w+days\b|"
    r"\b(?:once|twice|\w+ times) a (?:day|week|month|year)\b|\bmost (?:mornings|days|evenings|nights|weekends)\b|"
    r"\b(?:daily|nightly|weekly|monthly|yearly|annually|usually|normally|typically|regularly|often|tends? to)\b|"
    r"\b(?:at|by) (?:month|year|week|quarter)[- ]end\b|\b(?:workflow|routine|procedure|technique|trick)\b",
    re.I,
)
#: The turn's speaker, as a captured piece writes it ("Gina Torres: ", "user: "), not "Recipe: ".
_SPEAKER = re.compile(r"^(?:[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,2}|user|assistant):\s+", re.M)
_NOT_SPEAKERS = frozenset({"Recipe", "Note", "Tip", "Steps", "Step", "How", "Todo", "TODO", "PS", "Update"})
#: Clauses: a sentence, and what follows a colon or a comma ("Backing up the phone: connect it, ...").
_SENTENCE = re.compile(r"[^.!?;:,\n]+")


def reads_as_procedure(text: str) -> bool:
    """Whether ``text`` says what to do or how something is done (see the module's notes)."""
    words = _SPEAKER.sub(lambda m: m.group(0) if m.group(0).split(":")[0] in _NOT_SPEAKERS else "", text)
    if _HOW_TO.search(words) or _COMMAND.search(words) or _HABIT.search(words) or _RECURRING.search(words):
        return True
    if len(_LIST.findall(words)) >= 2 or len(_SEQUENCE.findall(words)) >= 2:
        return True
    if any(found.lower() in _VERBS for found in _YOU_DO.findall(words)):
        return True
    for sentence in _SENTENCE.findall(words):
        tokens = re.findall(r"[a-z][a-z'-]*", sentence.lower())
        if len(tokens) < 3:
            continue
        lead = tokens[1] if tokens[0] in _ADVERBS and len(tokens) > 3 else tokens[0]
        if _verb(lead) and not _said_of_oneself(tokens):
            return True
    for sentence in re.findall(r"[^.!?;\n]+", words):
        found = _TO_DO.match(sentence.strip())
        if found and found.group(1).lower() not in _PRONOUNS and found.group(2).lower() not in _PRONOUNS:
            return True
        tokens = re.findall(r"[a-z][a-z'-]*", sentence.lower())
        if tokens[:1] == ["to"] and len(tokens) > 3 and any(_verb(t) for t in tokens[3:]):
            return True  # "To renew the certificate run certbot renew": a purpose, then what to do
        found = _CONDITION.match(sentence.strip())
        if found and (found.group(1) or _verb(found.group(2).lower())):
            return True
    return False


def _verb(word: str) -> bool:
    """A verb of doing, as an order ("run") or a habit said without its subject ("runs", "washes")."""
    return word in _VERBS or (
        word.endswith("s") and (word[:-1] in _VERBS or (word.endswith("es") and word[:-2] in _VERBS))
    )


def _said_of_oneself(tokens: list[str]) -> bool:
    """ "go home now I think" reads as a verb first; a chat line with "I" or "we" after a bare verb is
    usually a clipped statement ("Went to the park, we loved it" never starts with a base verb, but
    "love that we went" does)."""
    return tokens[0] in {"love", "hope", "miss", "wish", "like", "hate", "mean", "guess", "bet", "thank"}
