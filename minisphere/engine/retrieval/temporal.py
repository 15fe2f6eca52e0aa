"""Temporal query rewrite: time phrases become created_at bounds and leave the searched text.

All calendar arithmetic is in UTC. Bounds are half-open [since, until) in epoch ms; either may be
None. Several phrases intersect. Recognised (case-insensitive):

| phrase                                   | bounds                                          |
|------------------------------------------|-------------------------------------------------|
| today / this morning|afternoon|evening   | that part of today (morning 00-12, afternoon    |
| / tonight / last night                   | 12-18, evening & tonight 18-24, last night      |
|                                          | yesterday 18:00 to today 06:00)                 |
| yesterday / the day before yesterday     | that calendar day                               |
| this|last week, month, year              | calendar period (weeks start on Monday)         |
| N minutes|hours|days|weeks|months|years  | days: that calendar day; other units: the unit- |
| ago  (N a number, "a", "an" or a word)   | long window centred on now − N units            |
| past|last N <unit>s, past|last <unit>    | [now − N units, now]                            |
| on|since|before|after|until <day>        | <day> = YYYY-MM-DD, a weekday (the most recent  |
| in|during|since|before|after <month>     | one, today included) or a month name (the most  |
| in|during <year>, bare YYYY-MM-DD        | recent one, this month included) or a year      |
| last <weekday>                           | the most recent such day before today           |
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

_UNIT_MS = {
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 7 * 86_400_000,
    "month": 30 * 86_400_000,
    "year": 365 * 86_400_000,
}
_WORD_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTHS = {
    name: i + 1
    for i, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
_MONTHS.update(
    {
        "jan": 1,
        "feb": 2,
        "mar": 3,
        "apr": 4,
        "jun": 6,
        "jul": 7,
        "aug": 8,
        "sep": 9,
        "sept": 9,
        "oct": 10,
        "nov": 11,
        "dec": 12,
    }
)

_NUM = r"(?P<num>\d{1,4}|a couple of|a few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?P<unit>minute|hour|day|week|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")"
_MONTH = (
    r"(?P<month>"
    + "|".join(sorted(_MONTHS, key=len, reverse=True))
    + r")\.?(?:\s+(?P<myear>\d{4}))?"
)
_DATE = r"(?P<date>\d{4}-\d{2}-\d{2})"
_YEAR = r"(?P<year>(?:19|20)\d{2})"


@dataclass
class TimeBounds:
    since_ms: int | None = None
    until_ms: int | None = None
    phrases: list[str] = field(default_factory=list)

    def narrow(self, since: int | None, until: int | None, phrase: str) -> None:
        if since is not None:
            self.since_ms = since if self.since_ms is None else max(self.since_ms, since)
        if until is not None:
            self.until_ms = until if self.until_ms is None else min(self.until_ms, until)
        self.phrases.append(phrase)

    @property
    def active(self) -> bool:
        return self.since_ms is not None or self.until_ms is not None


def _ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def _day_start(dt: datetime) -> datetime:
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _next_month(dt: datetime) -> datetime:
    return _month_start(dt.year + dt.month // 12, dt.month % 12 + 1)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _WORD_NUMBERS[text]


def _recent_weekday(today: datetime, name: str, strictly_before: bool) -> datetime:
    back = (today.weekday() - _WEEKDAYS.index(name)) % 7
    if back == 0 and strictly_before:
        back = 7
    return today - timedelta(days=back)


def _recent_month(now: datetime, month: int, year: str | None) -> datetime:
    if year:
        return _month_start(int(year), month)
    return _month_start(now.year if month <= now.month else now.year - 1, month)


def _period(m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    """The [start, end) of the day/month/year a phrase names."""
    today = _day_start(now)
    if m.groupdict().get("date"):
        try:
            day = datetime.strptime(m.group("date"), "%Y-%m-%d").replace(tzinfo=UTC)
        except ValueError:
            return None
        return day, day + timedelta(days=1)
    if m.groupdict().get("weekday"):
        day = _recent_weekday(today, m.group("weekday").lower(), strictly_before=False)
        return day, day + timedelta(days=1)
    if m.groupdict().get("month"):
        start = _recent_month(now, _MONTHS[m.group("month").lower()], m.group("myear"))
        return start, _next_month(start)
    if m.groupdict().get("year"):
        year = int(m.group("year"))
        return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    return None


def _anchored(prep_pattern: str, target: str) -> re.Pattern[str]:
    return re.compile(rf"\b(?P<prep>{prep_pattern})\s+(?:the\s+)?{target}\b", re.IGNORECASE)


_RULES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.IGNORECASE), "ago"),
    (
        re.compile(rf"\b(?:in\s+)?(?:the\s+)?(?:past|last)\s+{_NUM}\s+{_UNIT}\b", re.IGNORECASE),
        "past_n",
    ),
    (re.compile(rf"\b(?:in\s+)?(?:the\s+)?past\s+{_UNIT}\b", re.IGNORECASE), "past_one"),
    (re.compile(r"\bthe day before yesterday\b", re.IGNORECASE), "day_before_yesterday"),
    (re.compile(r"\byesterday\b", re.IGNORECASE), "yesterday"),
    (re.compile(r"\blast night\b", re.IGNORECASE), "last_night"),
    (
        re.compile(
            r"\b(?:this\s+(?P<part>morning|afternoon|evening)|(?P<tonight>tonight))\b",
            re.IGNORECASE,
        ),
        "day_part",
    ),
    (re.compile(r"\btoday\b", re.IGNORECASE), "today"),
    (
        re.compile(r"\b(?P<which>this|last)\s+(?P<period>week|month|year)\b", re.IGNORECASE),
        "calendar",
    ),
    (re.compile(rf"\blast\s+{_WEEKDAY}\b", re.IGNORECASE), "last_weekday"),
    (_anchored("since|after|from", f"(?:{_DATE}|{_WEEKDAY}|{_MONTH}|{_YEAR})"), "open_after"),
    (_anchored("before|until|till", f"(?:{_DATE}|{_WEEKDAY}|{_MONTH}|{_YEAR})"), "open_before"),
    (_anchored("on", f"(?:{_DATE}|{_WEEKDAY})"), "within"),
    (_anchored("in|during", f"(?:{_MONTH}|{_YEAR})"), "within"),
    (re.compile(rf"\b{_DATE}\b"), "within"),
]


def _bounds_for(
    kind: str, m: re.Match[str], now: datetime
) -> tuple[datetime | None, datetime | None] | None:
    today = _day_start(now)
    if kind == "ago":
        n, unit = _number(m.group("num").lower()), m.group("unit").lower()
        if unit == "day":
            day = today - timedelta(days=n)
            return day, day + timedelta(days=1)
        centre, half = (
            now - timedelta(milliseconds=n * _UNIT_MS[unit]),
            timedelta(milliseconds=_UNIT_MS[unit] / 2),
        )
        return centre - half, centre + half
    if kind == "past_n":
        n, unit = _number(m.group("num").lower()), m.group("unit").lower()
        return now - timedelta(milliseconds=n * _UNIT_MS[unit]), None
    if kind == "past_one":
        return now - timedelta(milliseconds=_UNIT_MS[m.group("unit").lower()]), None
    if kind == "day_before_yesterday":
        return today - timedelta(days=2), today - timedelta(days=1)
    if kind == "yesterday":
        return today - timedelta(days=1), today
    if kind == "last_night":
        return today - timedelta(hours=6), today + timedelta(hours=6)
    if kind == "day_part":
        part = (m.group("part") or "evening").lower()
        start_h, end_h = {"morning": (0, 12), "afternoon": (12, 18), "evening": (18, 24)}[part]
        return today + timedelta(hours=start_h), today + timedelta(hours=end_h)
    if kind == "today":
        return today, None
    if kind == "calendar":
        which, period = m.group("which").lower(), m.group("period").lower()
        if period == "week":
            start = today - timedelta(days=today.weekday())
            return (start, None) if which == "this" else (start - timedelta(days=7), start)
        if period == "month":
            start = _month_start(now.year, now.month)
            if which == "this":
                return start, None
            previous = _month_start(now.year - (now.month == 1), (now.month - 2) % 12 + 1)
            return previous, start
        start = datetime(now.year, 1, 1, tzinfo=UTC)
        return (start, None) if which == "this" else (start.replace(year=now.year - 1), start)
    if kind == "last_weekday":
        day = _recent_weekday(today, m.group("weekday").lower(), strictly_before=True)
        return day, day + timedelta(days=1)
    period = _period(m, now)
    if period is None:
        return None
    start, end = period
    if kind == "open_after":
        prep = m.group("prep").lower()
        return (end if prep == "after" else start), None
    if kind == "open_before":
        prep = m.group("prep").lower()
        return None, (start if prep == "before" else end)
    return start, end


def extract_time_bounds(query: str, now_ms: int) -> tuple[str, TimeBounds]:
    """Return the query with time phrases removed, and the bounds they imply."""
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    bounds = TimeBounds()
    text = query
    for pattern, kind in _RULES:
        position = 0
        while (m := pattern.search(text, position)) is not None:
            try:
                span = _bounds_for(kind, m, now)
            except (OverflowError, ValueError):  # beyond the calendar (9999 years ago, 9999-12-31)
                span = None
            if span is None:  # looked like a date but is not one (2026-13-45): keep it as text
                position = m.end()
                continue
            since, until = span
            bounds.narrow(
                _ms(since) if since else None, _ms(until) if until else None, m.group(0).strip()
            )
            text = text[: m.start()] + " " + text[m.end() :]
            position = m.start()
    return re.sub(r"\s+", " ", text).strip(), bounds
