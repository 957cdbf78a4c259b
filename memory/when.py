"""Time in a question: "what did I cook last Friday?", "the plan from March", "two weeks ago".

``time_window`` reads the time a query names and returns the span of days it means (UTC), so
search can favour crystals said then (``memory.retrieval.search``: ``time_factor``). Pure: the
query and the current time in, a window or None out. Only what is said plainly is read; a query
naming no time is scored as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

DAY_MS = 86_400_000

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_WEEKDAYS = {d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "ten": 10}
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))

_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six|seven|ten)\s+(day|week|month|year)s?\s+ago\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\b\.?(?:,?\s+(\d{{4}}))?")
_MONTH_DAY = re.compile(rf"\b({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?")
_MONTH = re.compile(rf"\b(?:in|during|from|since|of|last|this)\s+({_MONTH_NAMES})\b(?:\s+(\d{{4}}))?")
_WEEKDAY = re.compile(r"\b(last|on|this past)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b")


# Every reader below needs one of these words: texts without any (most) cost one search.
_ANY = re.compile(
    rf"\b(?:today|tonight|yesterday|morning|night|ago|weekend|week|month|year|"
    rf"monday|tuesday|wednesday|thursday|friday|saturday|sunday|{_MONTH_NAMES})\b"
)


@dataclass(frozen=True, slots=True)
class Window:
    start_ms: int  # inclusive
    end_ms: int  # exclusive
    said: str  # the words that named it


def time_window(query: str, now_ms: int) -> Window | None:
    """The span of time ``query`` names, relative to ``now_ms``, or None."""
    text = query.lower()
    if _ANY.search(text) is None:
        return None
    today = datetime.fromtimestamp(now_ms / 1000, tz=UTC).date()
    for reader in (_relative_day, _ago, _day_month, _weekday, _named_span, _month):
        window = reader(text, today)
        if window is not None:
            return window
    return None


def _span(first: date, days: int, said: str) -> Window:
    start = int(datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp() * 1000)
    return Window(start, start + days * DAY_MS, said)


def _relative_day(text: str, today: date) -> Window | None:
    for words, back in (("today", 0), ("this morning", 0), ("tonight", 0), ("yesterday", 1), ("last night", 1)):
        if re.search(rf"\b{words}\b", text):
            return _span(today - timedelta(days=back), 1, words)
    return None


def _ago(text: str, today: date) -> Window | None:
    found = _AGO.search(text)
    if found is None:
        return None
    count = int(found.group(1)) if found.group(1).isdigit() else _NUMBERS[found.group(1)]
    unit = found.group(2)
    if unit == "day":
        return _span(today - timedelta(days=count), 1, found.group(0))
    if unit == "week":  # that week, give or take a few days
        return _span(today - timedelta(days=7 * count + 3), 7, found.group(0))
    if unit == "month":
        return _month_span(_add_months(today, -count), found.group(0))
    return _span(date(today.year - count, 1, 1), 366, found.group(0))


def _day_month(text: str, today: date) -> Window | None:
    for pattern, day_at, month_at in ((_DAY_MONTH, 1, 2), (_MONTH_DAY, 2, 1)):
        found = pattern.search(text)
        if found is None:
            continue
        day, month = int(found.group(day_at)), _MONTHS[found.group(month_at)]
        year = int(found.group(3)) if found.group(3) else _latest_year(today, month, day)
        try:
            return _span(date(year, month, day), 1, found.group(0))
        except ValueError:
            return None
    return None


def _weekday(text: str, today: date) -> Window | None:
    found = _WEEKDAY.search(text)
    if found is None:
        return None
    back = (today.weekday() - _WEEKDAYS[found.group(2)]) % 7 or 7  # the most recent one before today
    return _span(today - timedelta(days=back), 1, found.group(0))


def _named_span(text: str, today: date) -> Window | None:
    monday = today - timedelta(days=today.weekday())
    spans = (
        ("last weekend", monday - timedelta(days=2), 2),
        ("this weekend", monday + timedelta(days=5), 2),
        ("last week", monday - timedelta(days=7), 7),
        ("this week", monday, 7),
    )
    for words, first, days in spans:
        if words in text:
            return _span(first, days, words)
    if "last month" in text:
        return _month_span(_add_months(today, -1), "last month")
    if "this month" in text:
        return _month_span(today, "this month")
    if "last year" in text:
        return _span(date(today.year - 1, 1, 1), 365 + _leap(today.year - 1), "last year")
    return None


def _month(text: str, today: date) -> Window | None:
    found = _MONTH.search(text)
    if found is None or (found.group(1) == "may" and not found.group(2) and "in may" not in text):
        return None  # "may" alone is a verb more often than a month
    month = _MONTHS[found.group(1)]
    year = int(found.group(2)) if found.group(2) else _latest_year(today, month, 1)
    return _month_span(date(year, month, 1), found.group(0))


def _month_span(any_day: date, said: str) -> Window:
    first = any_day.replace(day=1)
    following = _add_months(first, 1)
    return _span(first, (following - first).days, said)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _latest_year(today: date, month: int, day: int) -> int:
    """The year of the most recent such date not after today (a memory looks back)."""
    return today.year if (month, day) <= (today.month, today.day) else today.year - 1


def _leap(year: int) -> int:
    return int(year % 4 == 0 and (year % 100 != 0 or year % 400 == 0))


#: A question that asks when: "When did…", "what date…", "which month…", "how long ago…".
_ASKS_WHEN = re.compile(
    r"\bwhen\b|\b(?:what|which) (?:date|day|days|time|year|month|week|weekend)\b|\bhow long ago\b|\bsince when\b"
)


@dataclass(frozen=True, slots=True)
class TimeAsked:
    """What a query asks of time: the span it names (``time_window``), and whether it asks when."""

    window: Window | None
    when: bool


def time_asked(query: str, now_ms: int) -> TimeAsked | None:
    """The time ``query`` names and whether it asks when something happened; None for neither."""
    window = time_window(query, now_ms)
    when = _ASKS_WHEN.search(query.lower()) is not None
    return TimeAsked(window, when) if window is not None or when else None
