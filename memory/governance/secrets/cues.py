"""The words that say a credential follows, in families that differ in what value they expect.

"pw", "Passwort" or "unlocks" expect a password; "door code" or "PIN" a number; "api key" or "token" a
long random string; "sort code" or "SSN" a number of six digits or more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Family(Enum):
    PASSWORD = "password"  # noqa: S105 - a family's name, not a password
    PIN = "pin"
    KEY = "key"
    ACCOUNT = "account"
    RECOVERY = "recovery"
    SEED = "seed"


# Word edges that let a cue sit inside an identifier ("DB_PASSWORD", "api_key") but not inside a
# longer word ("passed", "keynote", "spinning", "monkey").
_START = r"(?<![a-z0-9])"
_END = r"(?![a-z])"

_WORDS: dict[Family, str] = {
    Family.PASSWORD: (
        r"pass(?:word|wd|phrase|wort)?s?|pass phrase|pw|pwd|pswd|kennwort|mot de passe|contrase[ñn]a|senha|"
        r"wachtwoord|l[öo]senord|has[łl]o|salasana|adgangskode|creds|credentials|logins?|log ?in|logon|sign in|"
        r"unlock(?:s|ed)?|gets? (?:you |me )?in(?:to)?|p(?=\s*:)"
    ),
    Family.PIN: (
        r"pin(?!-up)s?(?: code| number)?|puk|passcode|keypad|combo|combination|cvv2?|cvc|security code|"
        r"opens with|padlock|(?:door|gate|alarm|entry|garage|building|safe|lock|locker|padlock|access|disarm|unlock|"
        r"voicemail|wi-?fi|sim|atm|box|front door|keysafe|lockbox)\s+code"
    ),
    Family.KEY: (
        r"api[ _\-]?keys?|x-api-key|keys?|keypair|tokens?|secrets?|client[ _]secret|secret[ _]key|"
        r"private[ _]key|access[ _]key|signing[ _]key|auth|bearer|dsn"
    ),
    Family.ACCOUNT: (
        r"account(?: number| no\.?| nr\.?| #)?|acct|a/c|iban|routing(?: number)?|aba|sort ?code|bsb|ssn|"
        r"social security(?: number| no\.?)?|national insurance(?: number)?|ni number|tax id|tax number|"
        r"tax file number|steuer-?id|steuernummer|personnummer|bank details"
    ),
    Family.RECOVERY: (
        r"recovery (?:key|codes?)|backup codes?|2fa|mfa|totp|otp|authenticator(?: secret| key)?|setup key|"
        r"bitlocker|filevault"
    ),
    Family.SEED: r"seed(?: phrase| words)?|mnemonic|recovery phrase|secret phrase|(?:12|24) words|wallet words",
}
# Short capitalised forms that are ordinary words in lower case ("sin", "tin", "pat").
_CASED: dict[Family, str] = {Family.ACCOUNT: r"\b(?:SIN|TIN|NINO)\b", Family.KEY: r"\bPAT\b"}

CUES = re.compile("|".join(f"(?P<{f.name}>{_START}(?:{w}){_END})" for f, w in _WORDS.items()))
CASED_CUES = re.compile("|".join(f"(?P<{f.name}>{w})" for f, w in _CASED.items()))

# A cue that is not one after these words: a boarding pass, a public key.
NOT_AFTER: dict[str, frozenset[str]] = {
    "pass": frozenset(
        [
            "boarding",
            "bus",
            "day",
            "season",
            "ski",
            "mountain",
            "hall",
            "free",
            "press",
            "backstage",
            "annual",
            "weekly",
            "monthly",
            "travel",
            "rail",
            "hiking",
        ]
    ),
    "key": frozenset({"public", "gpg", "pgp"}),
    "keys": frozenset({"public", "car", "house", "spare"}),
}


# Every cue holds one of these words: a text without any of them has no cue, found with one set look-up.
TRIGGERS = frozenset(
    [
        "pass",
        "password",
        "passwords",
        "passwd",
        "passphrase",
        "passwort",
        "passe",
        "pw",
        "pwd",
        "pswd",
        "kennwort",
        "contraseña",
        "contrasena",
        "senha",
        "wachtwoord",
        "lösenord",
        "losenord",
        "hasło",
        "haslo",
        "salasana",
        "adgangskode",
        "creds",
        "credentials",
        "login",
        "logins",
        "log",
        "logon",
        "sign",
        "unlock",
        "unlocks",
        "unlocked",
        "get",
        "gets",
        "p",
        "pin",
        "pins",
        "puk",
        "passcode",
        "keypad",
        "combo",
        "combination",
        "cvv",
        "cvv2",
        "cvc",
        "code",
        "opens",
        "padlock",
        "api",
        "apikey",
        "key",
        "keys",
        "keypair",
        "token",
        "tokens",
        "secret",
        "secrets",
        "auth",
        "bearer",
        "dsn",
        "account",
        "acct",
        "iban",
        "routing",
        "aba",
        "sort",
        "sortcode",
        "bsb",
        "ssn",
        "security",
        "insurance",
        "ni",
        "tax",
        "steuer",
        "steuerid",
        "steuernummer",
        "personnummer",
        "details",
        "recovery",
        "backup",
        "2fa",
        "mfa",
        "totp",
        "otp",
        "authenticator",
        "setup",
        "bitlocker",
        "filevault",
        "seed",
        "mnemonic",
        "phrase",
        "words",
        "sin",
        "tin",
        "nino",
        "pat",
    ]
)
_WORD = re.compile(r"[^\W_]+")


def may_hold_cue(lowered: str) -> bool:
    return not TRIGGERS.isdisjoint(_WORD.findall(lowered))


@dataclass(frozen=True, slots=True)
class Cue:
    family: Family
    start: int
    end: int
    word: str


def cues_in(clause: str) -> list[Cue]:
    lowered = clause.lower()
    found = [Cue(Family[m.lastgroup or ""], m.start(), m.end(), m.group()) for m in CUES.finditer(lowered)]
    found += [Cue(Family[m.lastgroup or ""], m.start(), m.end(), m.group()) for m in CASED_CUES.finditer(clause)]
    kept = []
    for cue in found:
        before = lowered[: cue.start].split()
        if before and before[-1] in NOT_AFTER.get(cue.word, frozenset()):
            continue
        kept.append(cue)
    return kept
