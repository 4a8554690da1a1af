"""Age cut-offs: a memory of a type, subtype or temporal class with a cut-off
(`recall.cutoffs` in memdir.yaml: emotion 48 h, date and financial 168 h, ephemeral 24 h) is
past it once it is older than that, and is then neither recalled nor put into wake or boot
(docs/RECALL.md section 3). One rule for recall and the documents, so they never disagree.

Two exceptions keep the cut-offs for what they are for — news that goes stale, like a feeling
or a note about today — and away from what the person relies on:

- **hard facts** are exempt (`is_hard_fact`): the current memory of a supersede key, a pinned
  memory, and a teaching the user typed as one of HARD_FACT_TYPES (money, medication). "My
  rent is 1450 euros a month" taught on 1 November is still the rent on 9 November.
- a **dated** memory (a `date` or `appointment` label, or the `ephemeral` class) that names a
  calendar day counts its cut-off from the end of that day, when it is later than the memory:
  "my dentist appointment is on 3 December", taught on 1 November, is recalled until a week
  after 3 December, not until 8 November.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timedelta

# A teaching the user typed as one of these is a hard fact (ANIMA's hard-fact store bypasses
# the age filter the same way): what they owe and what they take does not go stale in a week.
HARD_FACT_TYPES = frozenset({"FINANCIAL", "MEDICATION"})
# The labels whose cut-off counts from the day a memory names rather than from when it was
# written: appointments, bookings, "the plumber comes on Friday 4 December".
DATED_LABELS = frozenset({"date", "appointment", "ephemeral"})
# A memory the user rated at least this important (`--importance`, 1–10) stays in wake and boot
# at any age while it is current, as hard facts do (docs/CONTINUITY.md, "Kept at any age").
STANDING_IMPORTANCE = 8
# A year-less date this many days before the memory is a past day of that year, else the next.
PAST_SLACK_DAYS = 7

MONTHS = {
    name: number
    for number, names in enumerate(
        (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
         ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
         ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
         ("december", "dec")),
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<year>(?:19|20)\d\d))?"
_PATTERNS = (
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?(?P<name>{_MONTH})\.?\b{_YEAR}", re.IGNORECASE),
    re.compile(rf"\b(?P<name>{_MONTH})\.?\s+{_DAY}\b{_YEAR}", re.IGNORECASE),
)
# What each pattern holds: a digit followed by a space or a hyphen (or by "rd " and the like),
# or a space then a digit. A text without one names no day; this one scan, which jumps from
# digit to digit, turns most texts away before the three patterns run (tests/test_delivery.py).
_NEAR_DIGIT = re.compile(r"\d(?:(?:\w\w)?[\s-]|(?<=\s\d))")


def is_hard_fact(*, key: str | None, pinned: bool, source: str | None,
                 type: str | None) -> bool:  # fmt: skip
    """Whether a memory is a hard fact, exempt from the age cut-offs (the module doc)."""
    if key or pinned:
        return True
    return source == "teaching" and str(type or "").upper() in HARD_FACT_TYPES


def stands(*, key: str | None, pinned: bool, source: str | None, type: str | None,
           importance: int | None) -> bool:  # fmt: skip
    """Whether wake and boot keep a memory at any age while it is current: a hard fact, or one
    rated at least STANDING_IMPORTANCE. Importance alone exempts nothing from the cut-offs: a
    vital feeling is still news that goes stale (the briefings check `past_cutoff` as well)."""
    if is_hard_fact(key=key, pinned=pinned, source=source, type=type):
        return True
    return isinstance(importance, int) and importance >= STANDING_IMPORTANCE


def named_day(text: str, created: datetime) -> date | None:
    """The first calendar day `text` names ("3 December", "December 3rd, 2026", "2026-12-03"),
    a year-less one placed in the year that makes it the next such day (or one at most
    PAST_SLACK_DAYS before `created`: "on 28 November" written on 1 December is a past day)."""
    if _NEAR_DIGIT.search(text) is None:
        return None
    for pattern in _PATTERNS:
        for found in pattern.finditer(text):
            parts = found.groupdict()
            month = MONTHS.get(parts["name"].lower()) if parts.get("name") else int(parts["month"])
            if month is None:  # a letter that matches only when cases are ignored: "ſept" (long s)
                continue
            year = int(parts["year"]) if parts.get("year") else None
            day = _valid(year or created.year, month, int(parts["day"]))
            if day is None:
                continue
            if year is None and day < created.date() - timedelta(days=PAST_SLACK_DAYS):
                day = _valid(created.year + 1, month, day.day) or day
            return day
    return None


def _valid(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def past_cutoff(labels: Iterable[str | None], created: datetime, now: datetime,
                cutoffs: Mapping[str, timedelta], *, text: str = "",
                hard: bool = False) -> str | None:  # fmt: skip
    """The label whose cut-off a memory created at `created` is past at `now`, or None.
    `labels` are its type, subtype and temporal class (any may be None); a hard fact is past
    none, and a dated label counts from the end of the day `text` names when that is later."""
    if hard:
        return None
    for label in labels:
        name = str(label).lower() if label else ""
        cutoff = cutoffs.get(name) if name else None
        if cutoff is None:
            continue
        start = created
        if name in DATED_LABELS and text:
            day = named_day(text, created)
            if day is not None:
                end_of_day = datetime.combine(day + timedelta(days=1), datetime.min.time(),
                                              tzinfo=created.tzinfo)  # fmt: skip
                start = max(created, end_of_day)
        if now - start > cutoff:
            return str(label)
    return None
