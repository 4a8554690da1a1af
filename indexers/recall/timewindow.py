"""Time expressions in a query turned into a time window, by rules, relative to *now*.

Understood (case-insensitive): today, yesterday, last night, this/last week, this/last month,
this/last year, N days/weeks/months/years ago (digits or words, "a"), in/during MONTH [YEAR],
MONTH YEAR, on DAY MONTH [YEAR], numeric dates (2024-01-24; 24.01.2024, day first; 1/24/2024,
month first unless the first number cannot be a month), in YEAR, last/this
spring/summer/autumn/fall/winter, SEASON [of] YEAR, the first/second/third/fourth/last week of
MONTH [YEAR] or of YEAR, last WEEKDAY. "N units ago" is a window around that point
(± a quarter of the unit, at least a day) because people round. Months without a year mean the
latest such month not after now.

Recall ranks by the window rather than filtering by it (relevance.py's `when`: 1 inside, falling
to 0 at `reach_seconds` outside), because people in a chat tell of a day's events days later,
plan them days before, and misplace dates: as a filter, day windows lost most of the temporal
questions of real conversations (docs/RECALL.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")],
        start=1,
    )
    for name in names
}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "few": 3,
}  # fmt: skip
SEASONS = {
    "spring": (3, 6),
    "summer": (6, 9),
    "autumn": (9, 12),
    "fall": (9, 12),
    "winter": (12, 3),
}
# "the second week of November": the month's (or year's) days 8 to 14
WEEK_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3,
                 "4th": 3}  # fmt: skip
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
MIN_REACH = timedelta(days=7)

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBER = r"\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True))
_ORDINAL = r"(?:st|nd|rd|th)?"
_YEAR = r",?\s*(?P<year>(?:19|20)\d\d)?"


@dataclass(frozen=True)
class TimeWindow:
    """[start, end) in UTC and the words that produced it."""

    start: datetime
    end: datetime
    phrase: str

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    def reach_seconds(self) -> float:
        """How far outside the window closeness falls to 0: the window's length, at least
        MIN_REACH."""
        return max((self.end - self.start).total_seconds(), MIN_REACH.total_seconds())


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, zone: tzinfo) -> datetime:
    while month > 12:
        year, month = year + 1, month - 12
    while month < 1:
        year, month = year - 1, month + 12
    return datetime(year, month, 1, tzinfo=zone)


def _window(start: datetime, end: datetime, phrase: str) -> TimeWindow:
    return TimeWindow(start.astimezone(timezone.utc), end.astimezone(timezone.utc), phrase)


def find_time_window(query: str, now: datetime, zone: tzinfo = timezone.utc) -> TimeWindow | None:
    """The first time expression in the query as a window, or None."""
    text = query.lower()
    local = now.astimezone(zone)
    today = _day(local)
    for rule in _RULES:
        match = rule[0].search(text)
        if match:
            found = rule[1](match, local, today, zone)
            if found is not None:
                return _window(found[0], found[1], match.group(0).strip())
    return None


def _today(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    return today, today + timedelta(days=1)


def _yesterday(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    return today - timedelta(days=1), today


def _last_night(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    return today - timedelta(hours=6), today + timedelta(hours=6)


def _relative_period(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    which, unit = m.group(1), m.group(2)
    if which == "past":
        return now - timedelta(days=UNIT_DAYS[unit]), now + timedelta(seconds=1)
    if unit == "week":
        start = today - timedelta(days=today.weekday())
        if which == "last":
            start -= timedelta(days=7)
        return start, start + timedelta(days=7)
    if unit == "month":
        start = _month_start(today.year, today.month - (1 if which == "last" else 0), zone)
        return start, _month_start(start.year, start.month + 1, zone)
    year = today.year - (1 if which == "last" else 0)
    return datetime(year, 1, 1, tzinfo=zone), datetime(year + 1, 1, 1, tzinfo=zone)


def _ago(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    amount_text = m.group(1)
    amount = int(amount_text) if amount_text.isdigit() else NUMBER_WORDS[amount_text]
    days = UNIT_DAYS[m.group(2)]
    point = now - timedelta(days=amount * days)
    slack = timedelta(days=max(1.0, days * amount / 4))
    return point - slack, point + slack


def _month_year(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime] | None:
    month = MONTHS[m.group("month")]
    year_text = m.group("year")
    year = int(year_text) if year_text else _latest_year(month, today)
    start = datetime(year, month, 1, tzinfo=zone)
    return start, _month_start(year, month + 1, zone)


def _latest_year(month: int, today: datetime) -> int:
    """The year of the latest such month not after today (a month named without a year)."""
    return today.year if month <= today.month else today.year - 1


def _day_month(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime] | None:
    month = MONTHS[m.group("month")]
    day = int(m.group("day"))
    year_text = m.group("year")
    year = int(year_text) if year_text else today.year
    try:
        start = datetime(year, month, day, tzinfo=zone)
    except ValueError:
        return None
    if not year_text and start > today:
        start = start.replace(year=year - 1)
    return start, start + timedelta(days=1)


def _numeric_date(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime] | None:
    """2024-01-24; 24.01.2024 (dots: day first); 1/24/2024 (slashes: month first unless the
    first number cannot be a month)."""
    if m.group("iso"):
        year, month, day = int(m.group("iy")), int(m.group("im")), int(m.group("id"))
    elif m.group("dotted"):
        day, month, year = int(m.group("dd")), int(m.group("dm")), int(m.group("dy"))
    else:
        month, day, year = int(m.group("sa")), int(m.group("sb")), int(m.group("sy"))
        if month > 12:
            month, day = day, month
    try:
        start = datetime(year, month, day, tzinfo=zone)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def _year(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    year = int(m.group(1))
    return datetime(year, 1, 1, tzinfo=zone), datetime(year + 1, 1, 1, tzinfo=zone)


def _season(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    which, season = m.group(1), m.group(2)
    year = today.year
    start, end = _season_span(season, year, zone)
    # "this summer" is the latest one that has started; "last summer" the one before
    if start > today:
        start, end = start.replace(year=year - 1), end.replace(year=end.year - 1)
    if which == "last" and end > today:
        start, end = start.replace(year=start.year - 1), end.replace(year=end.year - 1)
    return start, end


def _season_of_year(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    """ "spring of 2024", "winter 2021" (the winter that starts in December 2021)."""
    return _season_span(m.group("season"), int(m.group("year")), zone)


def _season_span(season: str, year: int, zone: tzinfo) -> tuple[datetime, datetime]:
    """The season that starts in this year, as [its first month, the month after its last)."""
    first, after = SEASONS[season]
    start = datetime(year, first, 1, tzinfo=zone)
    return start, _month_start(year + (1 if after < first else 0), after, zone)


def _week_of(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    """The Nth (or last) seven days of a month ("the second week of November") or of a year
    ("the first week of 2024"). A month without a year is the latest such month not after now."""
    month_text, year_text = m.group("month"), m.group("year")
    if month_text:
        month = MONTHS[month_text]
        year = int(year_text) if year_text else _latest_year(month, today)
        start, end = datetime(year, month, 1, tzinfo=zone), _month_start(year, month + 1, zone)
    else:
        year = int(m.group("only_year"))
        start, end = datetime(year, 1, 1, tzinfo=zone), datetime(year + 1, 1, 1, tzinfo=zone)
    which = m.group("which")
    if which == "last":
        return end - timedelta(days=7), end
    first = start + timedelta(days=7 * WEEK_ORDINALS[which])
    return first, first + timedelta(days=7)


def _weekday(
    m: re.Match[str], now: datetime, today: datetime, zone: tzinfo
) -> tuple[datetime, datetime]:
    target = WEEKDAYS.index(m.group(1))
    back = (today.weekday() - target) % 7 or 7
    start = today - timedelta(days=back)
    return start, start + timedelta(days=1)


_RULES: list[tuple[re.Pattern[str], Any]] = [
    (re.compile(r"\btoday\b|\bthis morning\b|\bthis evening\b|\btonight\b"), _today),
    (re.compile(r"\byesterday\b"), _yesterday),
    (re.compile(r"\blast night\b"), _last_night),
    (re.compile(rf"\b({_NUMBER})\s+(day|week|month|year)s?\s+ago\b"), _ago),
    (re.compile(rf"\b(?P<which>first|1st|second|2nd|third|3rd|fourth|4th|last)\s+week\s+of\s+"
                rf"(?:(?P<month>{_MONTH})\b{_YEAR}|(?P<only_year>(?:19|20)\d\d)\b)"), _week_of),
    (re.compile(r"\b(?P<season>spring|summer|autumn|fall|winter)\s+(?:of\s+)?"
                r"(?P<year>(?:19|20)\d\d)\b"), _season_of_year),
    (re.compile(r"\b(last|this|past)\s+(week|month|year)\b"), _relative_period),
    (re.compile(rf"\b(?:on\s+)?(?:the\s+)?(?P<day>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<month>{_MONTH})\b{_YEAR}"),
     _day_month),
    (re.compile(rf"\b(?P<month>{_MONTH})\s+(?P<day>\d{{1,2}}){_ORDINAL}\b{_YEAR}"), _day_month),
    (re.compile(r"\b(?:on\s+)?(?:(?P<iso>(?P<iy>(?:19|20)\d\d)-(?P<im>\d\d?)-(?P<id>\d\d?))"
                r"|(?P<dotted>(?P<dd>\d\d?)\.(?P<dm>\d\d?)\.(?P<dy>(?:19|20)\d\d))"
                r"|(?P<sa>\d\d?)/(?P<sb>\d\d?)/(?P<sy>(?:19|20)\d\d))\b"), _numeric_date),
    (re.compile(rf"\b(?:in|during)\s+(?P<month>{_MONTH})\b,?\s*(?P<year>(?:19|20)\d\d)?"), _month_year),
    (re.compile(rf"\b(?P<month>{_MONTH})\s+(?P<year>(?:19|20)\d\d)\b"), _month_year),
    (re.compile(r"\b(last|this)\s+(spring|summer|autumn|fall|winter)\b"), _season),
    (re.compile(r"\blast\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"), _weekday),
    (re.compile(r"\b(?:in|during)\s+((?:19|20)\d\d)\b"), _year),
]  # fmt: skip
